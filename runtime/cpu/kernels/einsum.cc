// Einsum of two operands, the form attention written as einsum takes ("bhid,bhjd->bhij",
// MaxViT's "BGHID,BGHJD->BGHIJ"): each operand permuted to [batch, kept, contracted] letters, one
// GEMM per batch entry, the product permuted to the output's letter order (the route torch's
// sumproduct_pair takes). Backward is two einsums of the same kind, dA = einsum(Y, B -> A) and
// dB = einsum(A, Y -> B): every letter of A is in B or in Y, so each is again a contraction.
// Not covered (an error naming the equation): one or three operands, an ellipsis, a letter
// repeated in one term (a diagonal), a letter summed in one operand only, broadcast letters.

#include <string>
#include <vector>

#include "graph/ops/einsum_rules.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/gemm_core.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// A two-operand contraction: subscripts, the letters by role and the size of each letter.
struct Contraction {
  std::string a, b, out;
  std::string batch, left, right;  // in the output's order: in both operands / A only / B only
  std::string contracted;          // in both operands and not in the output, in A's order
  int64_t size[256] = {};          // by letter (byte value)

  int64_t Product(const std::string& letters) const {
    int64_t n = 1;
    for (char c : letters) n *= size[static_cast<unsigned char>(c)];
    return n;
  }
  // The axes of `term` that hold `letters`, in the order of `letters`.
  static std::vector<int64_t> AxesOf(const std::string& term, const std::string& letters) {
    std::vector<int64_t> axes;
    for (char c : letters) axes.push_back(static_cast<int64_t>(term.find(c)));
    return axes;
  }
};

bool Has(const std::string& term, char c) { return term.find(c) != std::string::npos; }

Error Unsupported(const std::string& equation, const std::string& why) {
  return MakeError("Einsum: the CPU kernel does not run '" + equation + "': " + why);
}

Expected<Contraction> PlanContraction(const std::string& equation, const std::string& a,
                                      const std::string& b, const std::string& out,
                                      const TensorShape& a_shape, const TensorShape& b_shape) {
  Contraction c{a, b, out};
  const std::string terms[3] = {a, b, out};
  for (const std::string& term : terms) {
    for (size_t i = 0; i < term.size(); ++i) {
      const char letter = term[i];
      if (letter == '.') return Unsupported(equation, "an ellipsis");
      if (term.find(letter, i + 1) != std::string::npos)
        return Unsupported(equation, std::string("the letter '") + letter + "' repeats in a term");
    }
  }
  for (int operand = 0; operand < 2; ++operand) {
    const std::string& term = operand == 0 ? a : b;
    const TensorShape& shape = operand == 0 ? a_shape : b_shape;
    if (term.size() != shape.size())
      return MakeError("Einsum: '" + term + "' names " + std::to_string(term.size()) +
                       " axes of an operand of shape " + ShapeToString(shape));
    for (size_t i = 0; i < term.size(); ++i) {
      int64_t& size = c.size[static_cast<unsigned char>(term[i])];
      if (operand == 1 && Has(a, term[i]) && size != shape[i])
        return Unsupported(equation,
                           std::string("the letter '") + term[i] + "' has two sizes (a broadcast)");
      size = shape[i];
    }
    const std::string& other = operand == 0 ? b : a;
    for (char letter : term)
      if (!Has(other, letter) && !Has(out, letter))
        return Unsupported(
            equation, std::string("the letter '") + letter + "' is summed in one operand only");
  }
  for (char letter : out) {
    if (Has(a, letter) && Has(b, letter)) {
      c.batch += letter;
    } else if (Has(a, letter)) {
      c.left += letter;
    } else if (Has(b, letter)) {
      c.right += letter;
    } else {
      return MakeError("Einsum: the output letter '" + std::string(1, letter) +
                       "' is in no operand of '" + equation + "'");
    }
  }
  for (char letter : a)
    if (Has(b, letter) && !Has(out, letter)) c.contracted += letter;
  return c;
}

// out[...] = sum over the contracted letters of a[...] * b[...], written (not added) to `out`,
// which has the shape of the output term.
void Contract(const Contraction& c, const float* a, const TensorShape& a_shape, const float* b,
              const TensorShape& b_shape, float* out) {
  const int64_t batch = c.Product(c.batch), left = c.Product(c.left), right = c.Product(c.right);
  const int64_t inner = c.Product(c.contracted);
  std::vector<float> a_packed(static_cast<size_t>(batch * left * inner));
  std::vector<float> b_packed(static_cast<size_t>(batch * inner * right));
  std::vector<float> product(static_cast<size_t>(batch * left * right), 0.0f);
  PermuteInto(a, a_shape, Contraction::AxesOf(c.a, c.batch + c.left + c.contracted),
              a_packed.data());
  PermuteInto(b, b_shape, Contraction::AxesOf(c.b, c.batch + c.contracted + c.right),
              b_packed.data());
  for (int64_t t = 0; t < batch; ++t) {
    GemmAccumulate(false, false, left, right, inner, 1.0f, a_packed.data() + t * left * inner,
                   b_packed.data() + t * inner * right, product.data() + t * left * right);
  }
  const std::string product_letters = c.batch + c.left + c.right;
  TensorShape product_shape;
  for (char letter : product_letters)
    product_shape.push_back(c.size[static_cast<unsigned char>(letter)]);
  PermuteInto(product.data(), product_shape, Contraction::AxesOf(product_letters, c.out), out);
}

Expected<EinsumEquation> TwoOperandEquation(const Attributes& attrs) {
  const std::string equation = attrs.GetString("equation", "");
  MEMPLAN_TRY(EinsumEquation parsed, ParseEinsumEquation(equation, 2));
  return parsed;
}

Expected<ForwardResult> EinsumForward(const KernelContext& ctx, const ForwardArgs& args) {
  if (args.inputs.size() != 2)
    return MakeError("Einsum: the CPU kernel runs two operands, got " +
                     std::to_string(args.inputs.size()));
  MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, "Einsum", "input"));
  MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, "Einsum", "input"));
  const std::string equation = AttributesOf(args.attributes).GetString("equation", "");
  MEMPLAN_TRY(EinsumEquation e, TwoOperandEquation(AttributesOf(args.attributes)));
  MEMPLAN_TRY(Contraction c,
              PlanContraction(equation, e.inputs[0], e.inputs[1], e.output, a.shape(), b.shape()));
  TensorShape shape;
  for (char letter : c.out) shape.push_back(c.size[static_cast<unsigned char>(letter)]);
  Tensor y = NewOverwrittenOutput(ctx, shape, a.dtype());
  Contract(c, a.data(), a.shape(), b.data(), b.shape(), y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> EinsumBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Einsum", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "Einsum"));
  const std::string equation = AttributesOf(args.attributes).GetString("equation", "");
  MEMPLAN_TRY(EinsumEquation e, TwoOperandEquation(AttributesOf(args.attributes)));
  const std::string& a_term = e.inputs[0];
  const std::string& b_term = e.inputs[1];
  // Each operand is saved only for the other's gradient, as for MatMul.
  for (size_t operand = 0; operand < 2; ++operand) {
    if (!args.NeedsGrad(operand)) continue;
    const size_t other = 1 - operand;
    MEMPLAN_TRY(Tensor saved, RequireTensor(args.inputs, other, "Einsum", "saved input"));
    // dA = einsum(Y, B -> A); dB = einsum(A, Y -> B).
    const bool first = operand == 0;
    const std::string& lhs = first ? e.output : a_term;
    const std::string& rhs = first ? b_term : e.output;
    const TensorShape& lhs_shape = first ? dy.shape() : saved.shape();
    const TensorShape& rhs_shape = first ? saved.shape() : dy.shape();
    MEMPLAN_TRY(Contraction c,
                PlanContraction(equation, lhs, rhs, first ? a_term : b_term, lhs_shape, rhs_shape));
    Tensor grad = NewOverwrittenInputGradient(ctx, args, operand);
    Contract(c, first ? dy.data() : saved.data(), lhs_shape, first ? saved.data() : dy.data(),
             rhs_shape, grad.mutable_data());
    PutRoundedGradient(grads, operand, std::move(grad));
  }
  return grads;
}

}  // namespace

void RegisterEinsumKernels(KernelRegistry& registry) {
  registry.Register("Einsum", &EinsumForward, &EinsumBackward);
}

}  // namespace memplan
