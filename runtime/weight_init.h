#pragma once
// Seeded data for running a model that carries no weights (memplan never keeps initializer data):
// initial parameter values, and inputs/labels of a synthetic task a model can learn, so the loss
// of a verification run falls.
//
// Everything is a pure function of (seed, what, index): a sample's data does not depend on the
// batch it is drawn in, so the full batch of k*m samples is exactly the concatenation of k
// micro-batches of m (what the accumulation check compares).

#include <cstdint>
#include <vector>

#include "analyzer/program/training_program.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"
#include "runtime/micro_batch.h"
#include "runtime/tensor.h"

namespace memplan {

// Initial values of parameter `value` (evaluated `shape`):
//   trainable rank >= 2 (weights, embeddings): uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
//     fan_in = elements / shape[0] (torch's Linear/Conv bound for [out, in, ...] layouts);
//   trainable rank <= 1: 0 for biases (names containing "bias" or "beta"), 1 otherwise (norm
//     scales);
//   not trainable (BatchNorm running statistics, masks): 0 for names containing "mean", else 1;
//   LoRA B adapters (names containing "lora_B"): 0, as PEFT initialises them.
std::vector<float> InitialParameterValues(const Value& value, const TensorShape& shape,
                                          uint64_t seed);

// Values of a constant initializer the model carries no data for (zoo models keep structure
// only). The one kind with a conventional meaning is a bool tensor of rank >= 2 whose last two
// dims are equal: a causal attention mask (GPT-2's "h.<i>.attn.bias", torch.tril(ones)), so it
// gets 1 on and below the diagonal. Anything else is an error naming the value: a guessed
// integer table would silently change what the model computes.
Expected<std::vector<float>> SyntheticConstantValues(const Value& value, const TensorShape& shape);

// The synthetic task of one model under one program:
//   float inputs: standard normal; integer inputs: uniform ids below the vocabulary (dim 0 of the
//     Gather table the input indexes; 2 when none);
//   cross entropy: per position, the class a fixed random linear teacher scores highest on the
//     position's first 4096 features, or (token inputs with one id per position) a fixed map of the
//     id;
//   --fused-loss (the program's loss is the sum over memplan:FusedLinearCrossEntropy's scalar):
//     the graph input the fused node reads as its target gets the labels the unfused graph's
//     cross entropy would get (the same rule, with the head's V classes), so the fused and the
//     unfused program train on the same task and their gradients can be compared;
//   mse: a fixed random linear teacher of the sample's features through tanh;
//   sum: no label.
// A loss over several outputs gets one label per term, each by its own rule; term i's teacher
// is drawn from seed + i.
class SyntheticData {
 public:
  // `bindings` binds every non-batch symbol; the batch symbol is rebound per Batch().
  static Expected<SyntheticData> Create(const Graph& graph, const TrainingProgram& program,
                                        const Bindings& bindings, uint64_t seed);

  // Samples [first, first + rows) as one micro-batch of `rows`.
  Expected<MicroBatch> Batch(int64_t first, int64_t rows) const;

 private:
  struct Input {
    std::vector<int64_t> sample_shape;  // without the batch dim
    DType dtype = DType::kFloat32;
    int64_t vocabulary = 2;  // integer inputs
  };
  // The labels of one loss term (or of the fused loss's target input).
  struct Labels {
    bool classes_of_teacher = false;  // cross entropy: class ids, else mse targets
    int64_t positions = 0;            // label elements per sample; 0: no label (sum)
    int64_t classes = 0;              // cross entropy
  };
  static std::vector<float> LabelsOf(const Labels& labels, uint64_t seed,
                                     const std::vector<std::vector<double>>& features, bool tokens);

  const TrainingProgram* program_ = nullptr;
  std::vector<Input> inputs_;
  std::vector<Labels> terms_;  // per TrainingProgram::loss_terms entry
  Labels fused_;               // the fused loss's target input
  // The index in inputs_ of the fused loss's target (its labels), or -1.
  int64_t label_input_ = -1;
  uint64_t seed_ = 0;
};

// The program's graph inputs with a buffer, in MicroBatch::inputs order (kLoadMicroBatch's).
std::vector<BufferId> MicroBatchInputBuffers(const TrainingProgram& program);

}  // namespace memplan
