#include "runtime/weight_init.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "graph/ops/fused_loss_op.h"
#include "runtime/counter_rng.h"
#include "runtime/program_shapes.h"

namespace memplan {
namespace {

// Independent streams: a value per (seed, stream, index).
uint64_t Bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return SplitMix64(SplitMix64(seed ^ (stream * 0xD1B54A32D192ED03ull)) + index);
}
double Uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>(Bits(seed, stream, index) >> 11) * 0x1.0p-53;
}
double Normal(uint64_t seed, uint64_t stream, uint64_t index) {
  // Box-Muller from two independent uniforms.
  const double u1 = std::max(Uniform01(seed, stream, 2 * index), 1e-300);
  const double u2 = Uniform01(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

uint64_t NameHash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

bool Contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// Streams of the synthetic task.
constexpr uint64_t kInputStream = 1000;
constexpr uint64_t kTeacherStream = 2000;
// Features an mse teacher reads per label element.
constexpr int64_t kMseTeacherFeatures = 256;
// Features a cross-entropy teacher reads per label position. Bounded because the teacher is
// evaluated per class and per sample: over all 150,528 features of a 224x224 image and 1000
// classes it cost more than the training step it labels (a fifth of `verify` on ResNet-18).
// The first 4096 features are still far more than the task needs to be learnable.
constexpr int64_t kCrossEntropyTeacherFeatures = 4096;

// A fixed teacher weight in uniform(-sqrt(3/fan_in), sqrt(3/fan_in)): unit-variance scores.
double Teacher(uint64_t seed, int64_t row, int64_t col, int64_t fan_in) {
  const double u =
      2.0 * Uniform01(seed, kTeacherStream,
                      static_cast<uint64_t>(row) * 1000003u + static_cast<uint64_t>(col)) -
      1.0;
  return u * std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(fan_in, 1)));
}

}  // namespace

std::vector<float> InitialParameterValues(const Value& value, const TensorShape& shape,
                                          uint64_t seed) {
  const int64_t n = NumElements(shape);
  std::vector<float> values(static_cast<size_t>(n));
  std::string name = value.name;
  std::transform(name.begin(), name.end(), name.begin(), [](char c) { return std::tolower(c); });
  if (!value.trainable) {
    // A buffer whose values the file stores and import read (a Dropout ratio of 0.5, Resize's
    // scales [1, 1, 2, 2]) keeps them: they are the model's semantics, not a statistic to
    // synthesise (the 1.0 below made the ratio 1, which Dropout refuses, and the scales 1, so the
    // Resize's output no longer fit its planned shape).
    if (value.float_values && value.float_values->size() == static_cast<size_t>(n)) {
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>((*value.float_values)[i]);
      return values;
    }
    std::fill(values.begin(), values.end(), Contains(name, "mean") ? 0.0f : 1.0f);
    return values;
  }
  // LoRA's B adapter starts at zero (PEFT), so the adapted model starts as the base model.
  if (Contains(name, "lora_b")) {
    std::fill(values.begin(), values.end(), 0.0f);
    return values;
  }
  if (shape.size() <= 1) {
    const bool bias = Contains(name, "bias") || Contains(name, "beta");
    std::fill(values.begin(), values.end(), bias ? 0.0f : 1.0f);
    return values;
  }
  const int64_t fan_in = std::max<int64_t>(n / std::max<int64_t>(shape[0], 1), 1);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  const uint64_t stream = NameHash(value.name);
  for (int64_t i = 0; i < n; ++i)
    values[static_cast<size_t>(i)] =
        static_cast<float>((2.0 * Uniform01(seed, stream, static_cast<uint64_t>(i)) - 1.0) * bound);
  return values;
}

Expected<std::vector<float>> SyntheticConstantValues(const Value& value, const TensorShape& shape) {
  const size_t rank = shape.size();
  if (value.dtype != DType::kBool || rank < 2 || shape[rank - 1] != shape[rank - 2])
    return MakeError("constant '" + value.name +
                     "' has no data and no conventional value (only a square bool causal mask "
                     "is synthesised); give the model its weight data");
  const int64_t n = NumElements(shape);
  const int64_t cols = shape[rank - 1];
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = i % cols;
    const int64_t row = (i / cols) % cols;
    values[static_cast<size_t>(i)] = col <= row ? 1.0f : 0.0f;
  }
  return values;
}

std::vector<BufferId> MicroBatchInputBuffers(const TrainingProgram& program) {
  std::vector<BufferId> inputs;
  for (const Buffer& b : program.buffers)
    if (b.role == BufferRole::kInput) inputs.push_back(b.id);
  return inputs;
}

Expected<SyntheticData> SyntheticData::Create(const Graph& graph, const TrainingProgram& program,
                                              const Bindings& bindings, uint64_t seed) {
  SyntheticData data;
  data.program_ = &program;
  data.seed_ = seed;
  const Bindings one = WithBatch(bindings, program.batch_symbol, 1);
  for (BufferId id : MicroBatchInputBuffers(program)) {
    const Buffer& b = program.buffer(id);
    Input input;
    input.dtype = b.dtype;
    MEMPLAN_TRY(TensorShape shape, EvaluateShape(b.shape, one));
    if (shape.empty() || shape[0] != 1)
      return MakeError("graph input '" + b.name + "' does not lead with the batch dimension");
    input.sample_shape.assign(shape.begin() + 1, shape.end());
    // Token ids index an embedding table: stay below its first dimension.
    if (b.value.valid()) {
      for (NodeId n : graph.value(b.value).consumers) {
        const Node& node = graph.node(n);
        if (node.op_type == "Gather" && node.inputs.size() > 1 && node.inputs[1] == b.value &&
            node.inputs[0].valid()) {
          const Shape& table = graph.value(node.inputs[0]).shape;
          if (table.known && table.rank() > 0) {
            MEMPLAN_TRY(int64_t rows, table.dims[0].Evaluate(one));
            input.vocabulary = std::max<int64_t>(rows, 1);
          }
        }
      }
    }
    data.inputs_.push_back(std::move(input));
    // The target of a fused linear cross entropy: labels below the head's vocabulary.
    if (!b.value.valid() || program.label_buffer.valid() || data.inputs_.size() < 2) continue;
    Labels& fused = data.fused_;
    for (NodeId n : graph.value(b.value).consumers) {
      const Node& node = graph.node(n);
      if (node.op_type != fused_loss::kOpType || node.domain != fused_loss::kDomain ||
          node.inputs.size() < 3 || node.inputs[2] != b.value || !node.inputs[1].valid())
        continue;
      const Shape& weight = graph.value(node.inputs[1]).shape;
      if (!weight.known || weight.rank() != 2)
        return MakeError("fused loss '" + node.name + "' has no 2-D weight");
      const bool transposed = node.attributes.GetInt(fused_loss::kTransposedWeight, 0) != 0;
      MEMPLAN_TRY(fused.classes, weight.dims[transposed ? 0 : 1].Evaluate(one));
      fused.classes_of_teacher = true;
      data.label_input_ = static_cast<int64_t>(data.inputs_.size()) - 1;
      fused.positions = NumElements(data.inputs_.back().sample_shape);
    }
  }
  for (const LossTerm& term : program.loss_terms) {
    Labels labels;
    if (term.label.valid()) {
      MEMPLAN_TRY(TensorShape shape, EvaluateShape(program.buffer(term.label).shape, one));
      labels.positions = NumElements(shape);
    }
    if (term.label.valid() && term.kind == LossKind::kCrossEntropy) {
      // The model output the term reads, [N, C], [N, S, C] or [N, C, d...], by its own shape,
      // not its buffer's (a Split chunk's buffer is the whole split input): the classes are at
      // the term's class axis, which the derivation read from the graph (a [N, T, C] head
      // transposed to [N, C, T] keeps them at 1, not at T).
      MEMPLAN_TRY(TensorShape logits, EvaluateShape(graph.value(term.output).shape, one));
      if (term.class_axis >= logits.size())
        return MakeError("the loss's class axis " + std::to_string(term.class_axis) +
                         " is not a dimension of '" + graph.value(term.output).name + "'");
      labels.classes = logits[term.class_axis];
      labels.classes_of_teacher = true;
    }
    data.terms_.push_back(labels);
  }
  return data;
}

Expected<MicroBatch> SyntheticData::Batch(int64_t first, int64_t rows) const {
  MicroBatch batch;
  // Per sample: the features of the first input, for the teacher.
  std::vector<std::vector<double>> features(static_cast<size_t>(rows));
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const Input& in = inputs_[k];
    if (static_cast<int64_t>(k) == label_input_) {
      batch.inputs.emplace_back();  // the labels, below
      continue;
    }
    const int64_t per_sample = NumElements(in.sample_shape);
    std::vector<float> values(static_cast<size_t>(per_sample * rows));
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t sample = static_cast<uint64_t>(first + r);
      for (int64_t e = 0; e < per_sample; ++e) {
        const uint64_t index =
            sample * static_cast<uint64_t>(per_sample) + static_cast<uint64_t>(e);
        float v;
        if (IsFloating(in.dtype)) {
          v = static_cast<float>(Normal(seed_, kInputStream + k, index));
        } else if (in.dtype == DType::kBool) {
          v = static_cast<float>(Bits(seed_, kInputStream + k, index) & 1u);
        } else {
          v = static_cast<float>(Bits(seed_, kInputStream + k, index) %
                                 static_cast<uint64_t>(in.vocabulary));
        }
        values[static_cast<size_t>(r * per_sample + e)] = v;
        if (k == 0) features[static_cast<size_t>(r)].push_back(v);
      }
    }
    batch.inputs.push_back(std::move(values));
  }
  const bool tokens = !inputs_.empty() && !IsFloating(inputs_[0].dtype);
  for (size_t i = 0; i < terms_.size(); ++i)
    batch.labels.push_back(LabelsOf(terms_[i], seed_ + i, features, tokens));
  if (label_input_ >= 0)
    batch.inputs[static_cast<size_t>(label_input_)] = LabelsOf(fused_, seed_, features, tokens);
  return batch;
}

std::vector<float> SyntheticData::LabelsOf(const Labels& labels, uint64_t seed,
                                           const std::vector<std::vector<double>>& features,
                                           bool tokens) {
  const int64_t positions = labels.positions;
  if (positions == 0) return {};  // no label (the sum loss)
  const auto rows = static_cast<int64_t>(features.size());
  std::vector<float> out(static_cast<size_t>(positions * rows));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<double>& x = features[static_cast<size_t>(r)];
    const auto size = static_cast<int64_t>(x.size());
    // Features per label position: the sample split evenly, else all of it.
    const bool split = size > 0 && size % positions == 0;
    const int64_t fan_in = split ? size / positions : size;
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t offset = split ? p * fan_in : 0;
      float label = 0.0f;
      if (labels.classes_of_teacher) {
        if (tokens && split && fan_in == 1) {
          label = static_cast<float>((static_cast<int64_t>(x[static_cast<size_t>(p)]) * 7 + 3) %
                                     labels.classes);
        } else {
          const int64_t used = std::min(fan_in, kCrossEntropyTeacherFeatures);
          int64_t best = 0;
          double best_score = -std::numeric_limits<double>::infinity();
          for (int64_t c = 0; c < labels.classes; ++c) {
            double score = 0.0;
            for (int64_t f = 0; f < used; ++f)
              score += Teacher(seed, c, f, used) * x[static_cast<size_t>(offset + f)];
            if (score > best_score) best_score = score, best = c;
          }
          label = static_cast<float>(best);
        }
      } else {
        // mse: one teacher row per label element over the sample's first kMseTeacherFeatures
        // features (bounded so large outputs stay cheap to label).
        const int64_t used = std::min(size, kMseTeacherFeatures);
        double score = 0.0;
        for (int64_t f = 0; f < used; ++f)
          score += Teacher(seed, p, f, used) * x[static_cast<size_t>(f)];
        label = static_cast<float>(std::tanh(score));
      }
      out[static_cast<size_t>(r * positions + p)] = label;
    }
  }
  return out;
}

}  // namespace memplan
