#include "tools/zoo/model_builder.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <type_traits>
#include <utility>

namespace memplan::zoo {
namespace {

// The opset and IR version of the exports the zoo imitates (torch.onnx.export, opset_version=17).
constexpr int64_t kOpsetVersion = 17;
constexpr int64_t kIrVersion = 8;
// Tensors start at multiples of this in the data file, so a runtime can map them for SIMD loads.
constexpr int64_t kExternalDataAlignment = 64;
// Elements generated per write when the data file is filled, bounding the staging buffer.
constexpr int64_t kWriteChunkElements = int64_t{1} << 20;

static_assert(std::endian::native == std::endian::little,
              "ONNX raw data is little-endian; the data writer copies host floats as they are");

int64_t ElementSize(int32_t type) { return type == onnx::TensorProto::BOOL ? 1 : 4; }

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// SplitMix64: a tiny, portable generator, so --with-weights writes the same bytes everywhere
// (std::uniform_real_distribution differs between standard libraries).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float NextSigned() {
    return static_cast<float>(static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0);
  }

 private:
  uint64_t state_;
};

// FNV-1a of the initializer name: each tensor gets its own stream, independent of write order.
uint64_t SeedFor(const std::string& model, const std::string& tensor) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (char c : model + "/" + tensor) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  }
  return hash;
}

void SetExternalEntry(onnx::TensorProto& tensor, const std::string& key, const std::string& value) {
  auto* entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

// An attribute with its name and type set; the caller fills the one value field the type names.
Attribute NamedAttribute(const std::string& name, onnx::AttributeProto::AttributeType type) {
  Attribute attribute;
  attribute.set_name(name);
  attribute.set_type(type);
  return attribute;
}

}  // namespace

Attribute IntAttr(const std::string& name, int64_t value) {
  Attribute attribute = NamedAttribute(name, onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

Attribute FloatAttr(const std::string& name, float value) {
  Attribute attribute = NamedAttribute(name, onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

Attribute IntsAttr(const std::string& name, const std::vector<int64_t>& values) {
  Attribute attribute = NamedAttribute(name, onnx::AttributeProto::INTS);
  for (int64_t v : values) attribute.add_ints(v);
  return attribute;
}

ModelBuilder::ModelBuilder(std::string model_name) : model_name_(std::move(model_name)) {
  model_.set_ir_version(kIrVersion);
  model_.set_producer_name("memplan-zoo");
  model_.set_producer_version("1");
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsetVersion);
  model_.mutable_graph()->set_name(model_name_);
}

namespace {

void FillValueInfo(onnx::ValueInfoProto& info, const std::string& name,
                   onnx::TensorProto::DataType type, const std::vector<DimSpec>& dims) {
  info.set_name(name);
  auto* tensor_type = info.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(type);
  auto* shape = tensor_type->mutable_shape();
  for (const DimSpec& dim : dims) {
    auto* d = shape->add_dim();
    if (const auto* size = std::get_if<int64_t>(&dim)) {
      d->set_dim_value(*size);
    } else {
      d->set_dim_param(std::get<std::string>(dim));
    }
  }
}

}  // namespace

std::string ModelBuilder::AddInput(const std::string& name, onnx::TensorProto::DataType type,
                                   const std::vector<DimSpec>& dims) {
  FillValueInfo(*model_.mutable_graph()->add_input(), name, type, dims);
  return name;
}

void ModelBuilder::AddOutput(const std::string& tensor, onnx::TensorProto::DataType type,
                             const std::vector<DimSpec>& dims) {
  FillValueInfo(*model_.mutable_graph()->add_output(), tensor, type, dims);
}

std::string ModelBuilder::AddInitializer(const std::string& name, onnx::TensorProto::DataType type,
                                         const std::vector<int64_t>& dims, Init init) {
  MEMPLAN_CHECK(initializer_names_.insert(name).second);
  auto* tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(type);
  int64_t num_elements = 1;
  for (int64_t d : dims) {
    tensor->add_dims(d);
    num_elements *= d;
  }
  sources_.push_back({num_elements, init});
  return name;
}

std::string ModelBuilder::AddParameter(const std::string& name, const std::vector<int64_t>& dims,
                                       Init init) {
  MEMPLAN_CHECK(init.kind != Init::Kind::kCausalMask);
  std::string added = AddInitializer(name, onnx::TensorProto::FLOAT, dims, init);
  num_parameter_elements_ += sources_.back().num_elements;
  return added;
}

std::string ModelBuilder::AddFloatBuffer(const std::string& name, const std::vector<int64_t>& dims,
                                         Init init) {
  MEMPLAN_CHECK(init.kind == Init::Kind::kConstant);
  return AddInitializer(name, onnx::TensorProto::FLOAT, dims, init);
}

std::string ModelBuilder::AddBoolBuffer(const std::string& name, const std::vector<int64_t>& dims,
                                        Init init) {
  MEMPLAN_CHECK(init.kind == Init::Kind::kCausalMask && dims.size() >= 2);
  return AddInitializer(name, onnx::TensorProto::BOOL, dims, init);
}

std::string ModelBuilder::UniqueNodeName(const std::string& scope, const std::string& op_type) {
  std::string base = scope + "/" + op_type;
  int count = node_name_counts_[base]++;
  return count == 0 ? base : base + "_" + std::to_string(count);
}

std::vector<std::string> ModelBuilder::AddNode(const std::string& scope, const std::string& op_type,
                                               const std::vector<std::string>& inputs,
                                               int num_outputs,
                                               const std::vector<Attribute>& attributes) {
  auto* node = model_.mutable_graph()->add_node();
  node->set_name(UniqueNodeName(scope, op_type));
  node->set_op_type(op_type);
  for (const std::string& input : inputs) node->add_input(input);
  std::vector<std::string> outputs;
  for (int k = 0; k < num_outputs; ++k) {
    outputs.push_back(node->name() + "_output_" + std::to_string(k));
    node->add_output(outputs.back());
  }
  for (const Attribute& attribute : attributes) *node->add_attribute() = attribute;
  return outputs;
}

std::string ModelBuilder::Op(const std::string& scope, const std::string& op_type,
                             const std::vector<std::string>& inputs,
                             const std::vector<Attribute>& attributes) {
  return AddNode(scope, op_type, inputs, /*num_outputs=*/1, attributes).front();
}

namespace {

// A Constant node's "value" attribute holding `tensor`.
Attribute TensorAttr(onnx::TensorProto tensor) {
  Attribute attribute;
  attribute.set_name("value");
  attribute.set_type(onnx::AttributeProto::TENSOR);
  *attribute.mutable_t() = std::move(tensor);
  return attribute;
}

// A literal INT64 or FLOAT tensor of `values`: a vector [n] when `as_vector`, else a scalar (no
// dims, one value).
template <class T>
onnx::TensorProto LiteralTensor(const std::vector<T>& values, bool as_vector) {
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, float>);
  constexpr bool kFloat = std::is_same_v<T, float>;
  onnx::TensorProto tensor;
  tensor.set_data_type(kFloat ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  if (as_vector) tensor.add_dims(static_cast<int64_t>(values.size()));
  for (T v : values) {
    if constexpr (kFloat) {
      tensor.add_float_data(v);
    } else {
      tensor.add_int64_data(v);
    }
  }
  return tensor;
}

}  // namespace

std::string ModelBuilder::ConstantInts(const std::string& scope,
                                       const std::vector<int64_t>& values) {
  return Op(scope, "Constant", {}, {TensorAttr(LiteralTensor(values, /*as_vector=*/true))});
}

std::string ModelBuilder::ConstantIntScalar(const std::string& scope, int64_t value) {
  return Op(scope, "Constant", {},
            {TensorAttr(LiteralTensor<int64_t>({value}, /*as_vector=*/false))});
}

std::string ModelBuilder::ConstantFloatScalar(const std::string& scope, float value) {
  return Op(scope, "Constant", {},
            {TensorAttr(LiteralTensor<float>({value}, /*as_vector=*/false))});
}

std::string ModelBuilder::ConstantBoolScalar(const std::string& scope, bool value) {
  onnx::TensorProto tensor;
  tensor.set_data_type(onnx::TensorProto::BOOL);
  tensor.add_int32_data(value ? 1 : 0);
  return Op(scope, "Constant", {}, {TensorAttr(std::move(tensor))});
}

std::string ModelBuilder::ConstantFloats(const std::string& scope,
                                         const std::vector<float>& values) {
  return Op(scope, "Constant", {}, {TensorAttr(LiteralTensor(values, /*as_vector=*/true))});
}

std::string ModelBuilder::ConstantOfShapeFloat(const std::string& scope, const std::string& shape,
                                               float value) {
  return Op(scope, "ConstantOfShape", {shape},
            {TensorAttr(LiteralTensor<float>({value}, /*as_vector=*/true))});
}

std::string ModelBuilder::DimOf(const std::string& scope, const std::string& tensor, int64_t axis) {
  std::string shape = Op(scope, "Shape", {tensor});
  std::string index = ConstantIntScalar(scope, axis);
  return Op(scope, "Gather", {shape, index}, {IntAttr("axis", 0)});
}

std::string ModelBuilder::ShapeTarget(const std::string& scope,
                                      const std::vector<ShapePart>& parts) {
  std::vector<std::string> pieces;
  for (const ShapePart& part : parts) {
    if (const auto* literal = std::get_if<int64_t>(&part)) {
      pieces.push_back(ConstantInts(scope, {*literal}));
    } else {
      std::string axes = ConstantInts(scope, {0});
      pieces.push_back(Op(scope, "Unsqueeze", {std::get<std::string>(part), axes}));
    }
  }
  return Op(scope, "Concat", pieces, {IntAttr("axis", 0)});
}

std::string ModelBuilder::Linear(const std::string& scope, const std::string& param_prefix,
                                 const std::string& x, int64_t in, int64_t out) {
  // Stored [in, out], as constant-folded exports store Linear weights for MatMul.
  std::string weight = AddParameter(param_prefix + ".weight", {in, out}, Init::UniformFanIn(in));
  std::string bias = AddParameter(param_prefix + ".bias", {out}, Init::UniformFanIn(in));
  std::string product = Op(scope, "MatMul", {x, weight});
  return Op(scope, "Add", {product, bias});
}

std::string ModelBuilder::LinearNoBias(const std::string& scope, const std::string& param_prefix,
                                       const std::string& x, int64_t in, int64_t out) {
  std::string weight = AddParameter(param_prefix + ".weight", {in, out}, Init::UniformFanIn(in));
  return Op(scope, "MatMul", {x, weight});
}

std::string ModelBuilder::Gemm(const std::string& scope, const std::string& param_prefix,
                               const std::string& x, int64_t in, int64_t out) {
  std::string weight = AddParameter(param_prefix + ".weight", {out, in}, Init::UniformFanIn(in));
  std::string bias = AddParameter(param_prefix + ".bias", {out}, Init::UniformFanIn(in));
  return Op(scope, "Gemm", {x, weight, bias},
            {FloatAttr("alpha", 1.0f), FloatAttr("beta", 1.0f), IntAttr("transB", 1)});
}

std::string ModelBuilder::LayerNorm(const std::string& scope, const std::string& param_prefix,
                                    const std::string& x, int64_t width, float epsilon) {
  std::string scale = AddParameter(param_prefix + ".weight", {width}, Init::Ones());
  std::string bias = AddParameter(param_prefix + ".bias", {width}, Init::Zeros());
  return Op(scope, "LayerNormalization", {x, scale, bias},
            {IntAttr("axis", -1), FloatAttr("epsilon", epsilon)});
}

std::string ModelBuilder::PreNormBlock(const std::string& scope, const std::string& prefix,
                                       const std::string& x, int64_t width, float epsilon,
                                       const SubLayer& attention, const SubLayer& mlp) {
  std::string h = LayerNorm(scope + "/ln_1", prefix + ".ln_1", x, width, epsilon);
  h = attention(h);
  std::string residual = Op(scope, "Add", {h, x});
  h = LayerNorm(scope + "/ln_2", prefix + ".ln_2", residual, width, epsilon);
  h = mlp(h);
  return Op(scope, "Add", {residual, h});
}

std::string ModelBuilder::GeluErf(const std::string& scope, const std::string& x) {
  std::string scaled = Op(scope, "Div", {x, ConstantFloatScalar(scope, std::sqrt(2.0f))});
  std::string erf = Op(scope, "Erf", {scaled});
  std::string one_plus = Op(scope, "Add", {erf, ConstantFloatScalar(scope, 1.0f)});
  std::string times_x = Op(scope, "Mul", {x, one_plus});
  return Op(scope, "Mul", {times_x, ConstantFloatScalar(scope, 0.5f)});
}

std::string ModelBuilder::SplitHeads(const std::string& scope, const std::string& x, int64_t heads,
                                     int64_t head_dim, bool is_key) {
  std::string batch = DimOf(scope, x, 0);
  std::string seq = DimOf(scope, x, 1);
  std::string target = ShapeTarget(scope, {batch, seq, heads, head_dim});
  std::string split = Op(scope, "Reshape", {x, target});
  std::vector<int64_t> perm =
      is_key ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  return Op(scope, "Transpose", {split}, {IntsAttr("perm", perm)});
}

ModelBuilder::AttentionHeads ModelBuilder::SplitFusedQkvAndScore(const std::string& scope,
                                                                 const std::string& qkv,
                                                                 int64_t width, int64_t heads) {
  std::vector<std::string> parts =
      AddNode(scope, "Split", {qkv, ConstantInts(scope, {width, width, width})},
              /*num_outputs=*/3, {IntAttr("axis", 2)});
  AttentionHeads h;
  h.q = SplitHeads(scope, parts[0], heads, width / heads, /*is_key=*/false);
  h.k = SplitHeads(scope, parts[1], heads, width / heads, /*is_key=*/true);
  h.v = SplitHeads(scope, parts[2], heads, width / heads, /*is_key=*/false);
  h.scores = Op(scope, "MatMul", {h.q, h.k});
  const float head_dim_sqrt = std::sqrt(static_cast<float>(width / heads));
  h.scores = Op(scope, "Div", {h.scores, ConstantFloatScalar(scope, head_dim_sqrt)});
  return h;
}

std::string ModelBuilder::MergeHeads(const std::string& scope, const std::string& context,
                                     int64_t width) {
  std::string merged = Op(scope, "Transpose", {context}, {IntsAttr("perm", {0, 2, 1, 3})});
  std::string batch = DimOf(scope, merged, 0);
  std::string seq = DimOf(scope, merged, 1);
  return Op(scope, "Reshape", {merged, ShapeTarget(scope, {batch, seq, width})});
}

std::string ModelBuilder::Dropout(const std::string& scope, const std::string& x, float ratio) {
  std::string ratio_value = ConstantFloatScalar(scope, ratio);
  std::string training = ConstantBoolScalar(scope, true);
  return AddNode(scope, "Dropout", {x, ratio_value, training}, /*num_outputs=*/2).front();
}

Status ModelBuilder::WriteDataFile(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return MakeError("cannot open '" + path + "' for writing");
  const auto& tensors = model_.graph().initializer();
  std::vector<char> staging;
  int64_t position = 0;
  for (int i = 0; i < tensors.size(); ++i) {
    const onnx::TensorProto& tensor = tensors.Get(i);
    const InitializerSource& source = sources_[static_cast<size_t>(i)];
    const int64_t offset = std::stoll(tensor.external_data(1).value());
    MEMPLAN_CHECK(offset >= position);
    staging.assign(static_cast<size_t>(offset - position), 0);  // alignment padding
    out.write(staging.data(), static_cast<std::streamsize>(staging.size()));

    SplitMix64 random(SeedFor(model_name_, tensor.name()));
    const float bound = 1.0f / std::sqrt(static_cast<float>(source.init.fan_in));
    const int64_t element_size = ElementSize(tensor.data_type());
    const int64_t last_dim = tensor.dims(tensor.dims_size() - 1);
    for (int64_t begin = 0; begin < source.num_elements; begin += kWriteChunkElements) {
      const int64_t count = std::min(kWriteChunkElements, source.num_elements - begin);
      staging.resize(static_cast<size_t>(count * element_size));
      for (int64_t k = 0; k < count; ++k) {
        const int64_t element = begin + k;
        char* slot = staging.data() + k * element_size;
        switch (source.init.kind) {
          case Init::Kind::kUniformFanIn: {
            float v = bound * random.NextSigned();
            std::memcpy(slot, &v, sizeof v);
            break;
          }
          case Init::Kind::kConstant:
            std::memcpy(slot, &source.init.value, sizeof source.init.value);
            break;
          case Init::Kind::kCausalMask: {
            // Row i of each [n, n] matrix may attend to columns j <= i.
            const int64_t row = (element / last_dim) % last_dim;
            *slot = static_cast<char>(element % last_dim <= row);
            break;
          }
        }
      }
      out.write(staging.data(), static_cast<std::streamsize>(staging.size()));
    }
    position = offset + source.num_elements * element_size;
  }
  if (!out.flush()) return MakeError("failed writing '" + path + "'");
  return OkStatus();
}

Status ModelBuilder::Write(const std::string& dir, bool write_weights) {
  const std::string data_name = model_name_ + ".onnx.data";
  auto& tensors = *model_.mutable_graph()->mutable_initializer();
  int64_t offset = 0;
  for (int i = 0; i < tensors.size(); ++i) {
    onnx::TensorProto& tensor = tensors[i];
    const int64_t length =
        sources_[static_cast<size_t>(i)].num_elements * ElementSize(tensor.data_type());
    offset = RoundUp(offset, kExternalDataAlignment);
    tensor.set_data_location(onnx::TensorProto::EXTERNAL);
    tensor.clear_external_data();
    SetExternalEntry(tensor, "location", data_name);
    SetExternalEntry(tensor, "offset", std::to_string(offset));
    SetExternalEntry(tensor, "length", std::to_string(length));
    offset += length;
  }

  const std::string model_path = dir + "/" + model_name_ + ".onnx";
  {
    std::ofstream out(model_path, std::ios::binary | std::ios::trunc);
    if (!out) return MakeError("cannot open '" + model_path + "' for writing");
    if (!model_.SerializeToOstream(&out)) {
      return MakeError("failed writing '" + model_path + "'");
    }
  }
  if (write_weights) MEMPLAN_RETURN_IF_ERROR(WriteDataFile(dir + "/" + data_name));
  return OkStatus();
}

}  // namespace memplan::zoo
