#include "graph/onnx_import.h"

#include "graph/trainable_parameters.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "graph/constant_weights.h"
#include "graph/data_dependent_counts.h"
#include "graph/exported_buffers.h"
#include "graph/file_byte_source.h"
#include "graph/float_shape_check.h"
#include "graph/folded_batch_norm.h"
#include "graph/fusion/fusion_table.h"
#include "graph/libonnx_crash_guards.h"
#include "graph/libonnx_support.h"
#include "graph/local_functions.h"
#include "graph/onnx_convert.h"
#include "graph/onnx_graph_builder.h"
#include "graph/proto_name_escaping.h"
#include "graph/proto_node_order.h"
#include "graph/shape_propagation.h"
#include "graph/tensor_data_check.h"
#include "graph/torch_scoped_names.h"
#include "graph/type_constraints.h"
#include "graph/upsample_scales.h"
#include "graph/weight_free_model.h"
#include "graph/weight_norm_order.h"

namespace memplan {
namespace {

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// protobuf parses at most 2 GiB - 1 bytes from one buffer; larger models keep their weights as
// external data.
constexpr int64_t kMaxModelFileBytes = std::numeric_limits<int>::max();

// Parses the model without its large float payloads (graph/weight_free_model.h): memplan never
// reads a weight, so the bytes protobuf, the checker and shape inference see are bounded by the
// graph, not by the weights.
Expected<onnx::ModelProto> ParseModel(ModelByteSource& source, const std::string& path) {
  if (source.size() == 0) return MakeError("model file '" + path + "' is empty");
  if (source.size() > kMaxModelFileBytes) {
    return MakeError("model file '" + path +
                     "' is larger than 2 GiB; protobuf cannot parse it (save weights as "
                     "external data)");
  }
  const std::string not_onnx = "'" + path +
                               "' is not a valid ONNX model (protobuf parsing failed: the "
                               "file is truncated or not an ONNX file)";
  auto stripped = StripLargeWeightPayloads(source);
  if (!stripped) {
    if (stripped.error().message.rfind("not well-formed", 0) == 0) return MakeError(not_onnx);
    return stripped.error();
  }
  onnx::ModelProto model;
  if (!model.ParseFromString(stripped->bytes)) return MakeError(not_onnx);
  if (!model.has_graph()) return MakeError("'" + path + "' is not a valid ONNX model (no graph)");
  return model;
}

// Readies the proto for onnx::checker and shape inference, which we run in memory:
//  * libonnx 1.12's checker stat()s every external-data file (relative to the current directory
//    for an in-memory model) and fails when it is absent, but memplan never needs the bytes. So
//    external initializers are moved out of the initializer list and declared as typed graph
//    inputs instead; their locations were already validated by the builder. The same holds for
//    initializers that store no data (their payload skipped by the weight-free parse, or
//    metadata-only by design), which the checker would reject for having no value field.
//  * the checker requires topologically sorted nodes; the builder has already proved the graph
//    acyclic, so an unsorted file is sorted here rather than rejected.
bool StoresNoData(const onnx::TensorProto& t) {
  return t.raw_data().empty() && t.float_data_size() == 0 && t.int32_data_size() == 0 &&
         t.string_data_size() == 0 && t.int64_data_size() == 0 && t.double_data_size() == 0 &&
         t.uint64_data_size() == 0;
}

void MoveExternalInitializersToInputs(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  // Most models store every initializer inline: nothing moves, and the list is not rebuilt (a
  // new TensorProto per initializer).
  const auto& initializers = g.initializer();
  if (std::none_of(initializers.begin(), initializers.end(),
                   [](const onnx::TensorProto& t) { return IsExternal(t) || StoresNoData(t); }))
    return;
  std::unordered_set<std::string> inputs;
  for (const auto& in : g.input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& t : *g.mutable_initializer()) {
    if (!IsExternal(t) && !StoresNoData(t)) {
      kept.Add()->Swap(&t);
      continue;
    }
    if (inputs.count(t.name())) continue;
    onnx::ValueInfoProto* input = g.add_input();
    input->set_name(t.name());
    auto* tensor_type = input->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(t.data_type());
    auto* shape = tensor_type->mutable_shape();
    for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  g.mutable_initializer()->Swap(&kept);
}

void PrepareForChecker(onnx::ModelProto& model, const Graph& graph) {
  MoveExternalInitializersToInputs(model);
  onnx::GraphProto& g = *model.mutable_graph();
  auto order = graph.TopologicalOrder();
  MEMPLAN_CHECK(order.ok());
  bool sorted = true;
  for (size_t i = 0; i < order->size() && sorted; ++i) sorted = (*order)[i].index() == i;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (NodeId id : *order) nodes.Add()->Swap(g.mutable_node(static_cast<int>(id.index())));
  g.mutable_node()->Swap(&nodes);
}

Status RunChecker(onnx::ModelProto& model, const std::string& path, Graph& graph) {
  // A model newer than this libonnx is checked as the newest IR version it knows, with a warning,
  // rather than rejected outright.
  const int64_t file_ir = model.ir_version();
  const int64_t known_ir = onnx::Version::IR_VERSION;
  if (file_ir > known_ir) {
    graph.warnings.push_back("model IR version " + std::to_string(file_ir) +
                             " is newer than this build's ONNX (" + std::to_string(known_ir) +
                             "); checked as " + std::to_string(known_ir));
    model.set_ir_version(known_ir);
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory, not a verdict on the model: main() says so in one line
  } catch (const std::exception& e) {
    return MakeError("'" + path + "' failed the ONNX checker: " + FirstLine(e.what()));
  }
  model.set_ir_version(file_ir);
  return OkStatus();
}

InferredType TypeOf(const onnx::TypeProto& type) {
  InferredType t;
  if (!type.has_tensor_type()) return t;
  const auto& tt = type.tensor_type();
  t.dtype = DTypeFromOnnx(tt.elem_type()).value_or(DType::kUndefined);
  if (!tt.has_shape()) return t;
  t.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    InferredDim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    if (d.has_dim_param()) dim.param = d.dim_param();
    t.dims.push_back(std::move(dim));
  }
  return t;
}

// Whether FuseImportPatterns(model, set) can change anything: every entry is anchored at a
// default-domain op of the top-level graph, and a graph with none of the anchors of `set` has
// nothing any entry matches, before or after another entry ran (none of them ran).
bool AnyFusionAnchored(const onnx::ModelProto& model, FusionSet set) {
  if (set == FusionSet::kNone) return false;
  std::unordered_set<std::string_view> anchors;
  for (const FusionEntry& entry : FusionTable())
    if (FusionSetApplies(set, entry)) anchors.insert(entry.anchor_op);
  const auto& nodes = model.graph().node();
  return std::any_of(nodes.begin(), nodes.end(),
                     [&](const onnx::NodeProto& n) { return anchors.count(n.op_type()) > 0; });
}

// Drops the initializers no node reads and that no graph input, output or value_info names from the
// model shape inference is about to see (after the checker judged them): they cannot change the
// type inferred for any node's output, the only types memplan reads back, but libonnx builds a
// TypeProto and a map entry for each (a quarter of the import of a model with 100,000 of them).
// A graph with subgraph attributes keeps everything (an outer-scope name read from within).
void DropUnreadInitializers(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  for (const auto& n : g.node())
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size() > 0) return;
  std::unordered_set<std::string_view> read;
  for (const auto& n : g.node())
    for (const auto& in : n.input()) read.insert(in);
  for (const auto& in : g.input()) read.insert(in.name());
  for (const auto& out : g.output()) read.insert(out.name());
  for (const auto& vi : g.value_info()) read.insert(vi.name());  // a declared type to merge
  const auto& initializers = g.initializer();
  if (std::all_of(initializers.begin(), initializers.end(),
                  [&](const onnx::TensorProto& t) { return read.count(t.name()) > 0; }))
    return;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& t : *g.mutable_initializer())
    if (read.count(t.name()) > 0) kept.Add()->Swap(&t);
  g.mutable_initializer()->Swap(&kept);
}

// ONNX shape inference; a failure is a warning (memplan's own rules still run).
InferredTypes RunOnnxShapeInference(onnx::ModelProto& model, Graph& graph) {
  InferredTypes types;
  DeclareUntypedShapeInputs(*model.mutable_graph());
  try {
    onnx::ShapeInferenceOptions options;
    options.check_type = false;
    options.error_mode = 0;  // skip nodes it cannot infer instead of throwing
    options.enable_data_propagation = true;
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory: main() says so in one line, never "inference failed"
  } catch (const std::exception& e) {
    graph.warnings.push_back("ONNX shape inference failed (" + FirstLine(e.what()) +
                             "); using memplan's shape rules only");
  }
  const auto& g = model.graph();
  for (const auto& vi : g.value_info()) types[vi.name()] = TypeOf(vi.type());
  for (const auto& vi : g.output()) types.emplace(vi.name(), TypeOf(vi.type()));
  return types;
}

// What the import rewrote before building the graph, each said in one warning when it happened.
struct ImportRewrites {
  InlinedFunctions inlined;
  int64_t restored_batch_norms = 0;
  int64_t escaped_names = 0;
  int64_t constant_weights = 0;
};

void AddRewriteWarnings(const ImportRewrites& done, Graph& graph) {
  const InlinedFunctions& inlined = done.inlined;
  if (inlined.calls > 0) {
    graph.warnings.push_back(std::to_string(inlined.calls) + " calls of " +
                             std::to_string(inlined.functions) + " model-local function" +
                             (inlined.functions == 1 ? "" : "s") + " (" + inlined.names +
                             ") are analysed as their bodies, written out in the graph");
  }
  if (done.restored_batch_norms > 0) {
    graph.warnings.push_back(
        std::to_string(done.restored_batch_norms) +
        " BatchNorm layers the dynamo exporter wrote in inference mode and its optimizer folded "
        "into the Conv or Gemm before them (FuseBatchNormInto*) are planned as BatchNormalization "
        "in training mode, as the training step runs them");
  }
  if (done.escaped_names > 0) {
    graph.warnings.push_back(std::to_string(done.escaped_names) +
                             " names in the model are not UTF-8; their invalid bytes are shown "
                             "as \\xNN");
  }
  if (done.constant_weights > 0) {
    graph.warnings.push_back(std::to_string(done.constant_weights) +
                             " weights stored as Constant nodes (a paddle2onnx/TensorFlow-style "
                             "export) are counted as trainable parameters");
  }
}

// libonnx's checker and shape inference, on the model as written (`as_written` when the fusions
// changed `model`), where libonnx knows the model's opsets and ops; otherwise a warning and no
// inferred types (memplan's registry rules give every shape).
Expected<InferredTypes> InferWithLibOnnx(const LibOnnxSupport& libonnx, onnx::ModelProto& model,
                                         std::optional<onnx::ModelProto>& as_written,
                                         const std::string& path, Graph& graph) {
  InferredTypes inferred;
  if (!libonnx.covered) {
    // A newer model than libonnx knows: the builder's structural checks have run, and every
    // shape comes from memplan's registry rules (which read each op at the model's opset).
    graph.warnings.push_back(LibOnnxSkippedNote(libonnx));
    return inferred;
  }
  bool inferable = true;
  if (as_written) {
    MoveExternalInitializersToInputs(*as_written);
    // The checker and libonnx's inference need sorted nodes: the copy as written is sorted here
    // (it cannot be cyclic when the fused one is not; if it were, both are skipped rather than
    // risked).
    inferable = SortProtoNodesTopologically(*as_written->mutable_graph());
  } else {
    PrepareForChecker(model, graph);
  }
  onnx::ModelProto& checked = as_written ? *as_written : model;
  if (inferable) {
    MEMPLAN_RETURN_IF_ERROR(RunChecker(checked, path, graph));
    DropUnreadInitializers(checked);
    inferred = RunOnnxShapeInference(checked, graph);
  }
  return inferred;
}

Expected<Graph> ImportParsedModel(onnx::ModelProto model, const std::string& path,
                                  const ImportOptions& options) {
  // Names that are not UTF-8 are escaped before anything reads them (graph/proto_name_escaping.h).
  const int64_t escaped_names = EscapeInvalidUtf8Names(model);
  // A dynamo export's nodes named after the module scopes torch recorded, as the TorchScript
  // exporter names them (graph/torch_scoped_names.h), before the fusions name fused nodes.
  NameNodesByTorchScopes(*model.mutable_graph());
  // Calls of model-local functions become the functions' bodies before anything reads the graph.
  MEMPLAN_TRY(const InlinedFunctions inlined, InlineLocalFunctions(model));
  // Before anything reads a tensor: libonnx trusts dims and data lengths
  // (graph/tensor_data_check.h).
  MEMPLAN_RETURN_IF_ERROR(ValidateStoredTensors(model.graph()));
  // Before libonnx's inference divides by a stride or loops over a Slice step
  // (graph/libonnx_crash_guards.h); memplan's own shape rules refuse the same values.
  MEMPLAN_RETURN_IF_ERROR(RefuseWhatLibOnnxCannotInfer(model.graph()));
  // The BatchNorms the dynamo exporter's optimizer folded into a Conv or Gemm, back as the
  // training step runs them (graph/folded_batch_norm.h); before anything reads the nodes.
  const int64_t restored_batch_norms = RestoreFoldedBatchNorms(*model.mutable_graph());
  MarkTrainingBatchNorms(*model.mutable_graph());
  // The TorchScript exporter's weight_norm in ATen's order (graph/weight_norm_order.h), unless
  // the graph is to be planned exactly as exported (--fusions none).
  if (options.fusions != FusionSet::kNone) ReorderWeightNorms(*model.mutable_graph());
  // Before the checker's preparation and the fusions rewrite value_info.
  const ExportedBuffers exported_buffers = ReadExportedBuffers(model.graph());
  // Decided on the model as written (before fusion adds com.microsoft nodes).
  const LibOnnxSupport libonnx = AssessLibOnnxSupport(model);
  const int64_t constant_weights = PromoteConstantWeights(model);
  // The checker and ONNX shape inference run on the model as written: fused nodes use ops of newer
  // opsets than the model imports (LayerNormalization in an opset-13 model), which the checker
  // rejects, and libonnx 1.12 crashes inferring some ops downstream of a node whose output type it
  // cannot infer (a com.microsoft Gelu; graph/libonnx_crash_guards.h steers around the
  // Shape case it is known for). The fusions keep every surviving value's name, so the
  // types inferred there carry over; the checker judges the file the user gave.
  std::optional<onnx::ModelProto> as_written;
  if (AnyFusionAnchored(model, options.fusions)) {
    onnx::ModelProto copy = model;
    if (FuseImportPatterns(model, options.fusions).total() > 0) as_written = std::move(copy);
  }
  MEMPLAN_TRY(Graph graph, BuildGraphFromProto(model, options));
  AddRewriteWarnings({inlined, restored_batch_norms, escaped_names, constant_weights}, graph);
  MEMPLAN_TRY(const InferredTypes inferred,
              InferWithLibOnnx(libonnx, model, as_written, path, graph));
  MEMPLAN_RETURN_IF_ERROR(PropagateShapes(graph, inferred));
  WarnDataDependentCounts(graph);
  // Once every dtype is known: libonnx's inference skipped a node whose inputs break its type
  // constraint instead of refusing it (graph/type_constraints.h).
  MEMPLAN_RETURN_IF_ERROR(CheckTypeConstraints(graph));
  MEMPLAN_RETURN_IF_ERROR(CheckUpsampleScales(graph));
  // A float shape computation divided by a constant 0 (graph/float_shape_check.h).
  MEMPLAN_RETURN_IF_ERROR(CheckFloatShapeDivisions(graph));
  MEMPLAN_RETURN_IF_ERROR(MarkTrainableParameters(graph));
  ApplyExportedBuffers(exported_buffers, graph);
  return graph;
}

}  // namespace

Expected<Graph> ImportOnnxModel(const std::string& path, const ImportOptions& options) {
  MEMPLAN_TRY(auto file, FileByteSource::Open(path, kMaxModelFileBytes, "model file"));
  MEMPLAN_TRY(onnx::ModelProto model, ParseModel(*file, path));
  return ImportParsedModel(std::move(model), path, options);
}

Expected<Graph> ImportOnnxModelFromBytes(std::string_view bytes, const std::string& name,
                                         const ImportOptions& options) {
  MemoryByteSource source(bytes);
  MEMPLAN_TRY(onnx::ModelProto model, ParseModel(source, name));
  return ImportParsedModel(std::move(model), name, options);
}

}  // namespace memplan
