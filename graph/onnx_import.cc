#include "graph/onnx_import.h"

#include "graph/trainable_parameters.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <unordered_set>

#include "graph/constant_weights.h"
#include "graph/gelu_fusion.h"
#include "graph/libonnx_support.h"
#include "graph/onnx_convert.h"
#include "graph/onnx_graph_builder.h"
#include "graph/shape_propagation.h"

namespace memplan {
namespace {

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

Expected<onnx::ModelProto> ReadModel(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return MakeError("'" + path + "' is a directory, not an ONNX model file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return MakeError("cannot open model file '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return MakeError("cannot read model file '" + path + "'");
  if (bytes.empty()) return MakeError("model file '" + path + "' is empty");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return MakeError("model file '" + path +
                     "' is larger than 2 GiB; protobuf cannot parse it (save weights as "
                     "external data)");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return MakeError("'" + path +
                     "' is not a valid ONNX model (protobuf parsing failed: the "
                     "file is truncated or not an ONNX file)");
  }
  if (!model.has_graph()) return MakeError("'" + path + "' is not a valid ONNX model (no graph)");
  return model;
}

// Readies the proto for onnx::checker and shape inference, which we run in memory:
//  * libonnx 1.12's checker stat()s every external-data file (relative to the current directory
//    for an in-memory model) and fails when it is absent, but memplan never needs the bytes. So
//    external initializers are moved out of the initializer list and declared as typed graph
//    inputs instead; their locations were already validated by the builder.
//  * the checker requires topologically sorted nodes; the builder has already proved the graph
//    acyclic, so an unsorted file is sorted here rather than rejected.
void MoveExternalInitializersToInputs(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::unordered_set<std::string> inputs;
  for (const auto& in : g.input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& t : *g.mutable_initializer()) {
    if (!IsExternal(t)) {
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

// ONNX shape inference; a failure is a warning (memplan's own rules still run).
InferredTypes RunOnnxShapeInference(onnx::ModelProto& model, Graph& graph) {
  InferredTypes types;
  try {
    onnx::ShapeInferenceOptions options;
    options.check_type = false;
    options.error_mode = 0;  // skip nodes it cannot infer instead of throwing
    options.enable_data_propagation = true;
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    graph.warnings.push_back("ONNX shape inference failed (" + FirstLine(e.what()) +
                             "); using memplan's shape rules only");
  }
  const auto& g = model.graph();
  for (const auto& vi : g.value_info()) types[vi.name()] = TypeOf(vi.type());
  for (const auto& vi : g.output()) types.emplace(vi.name(), TypeOf(vi.type()));
  return types;
}

}  // namespace

Expected<Graph> ImportOnnxModel(const std::string& path, const ImportOptions& options) {
  MEMPLAN_TRY(onnx::ModelProto model, ReadModel(path));
  // Decided on the model as written (before fusion adds com.microsoft nodes).
  const LibOnnxSupport libonnx = AssessLibOnnxSupport(model);
  const int64_t constant_weights = PromoteConstantWeights(model);
  // ONNX shape inference runs on the model as written: libonnx 1.12 crashes inferring some ops
  // downstream of a node whose output type it cannot infer (the fused com.microsoft Gelu). The
  // fusion keeps every surviving value's name, so the types inferred there carry over.
  std::optional<onnx::ModelProto> as_written;
  if (options.fuse_gelu) {
    onnx::ModelProto copy = model;
    if (FuseErfGelu(model) > 0) as_written = std::move(copy);
  }
  MEMPLAN_TRY(Graph graph, BuildGraphFromProto(model, options));
  if (constant_weights > 0) {
    graph.warnings.push_back(std::to_string(constant_weights) +
                             " weights stored as Constant nodes (a paddle2onnx/TensorFlow-style "
                             "export) are counted as trainable parameters");
  }
  InferredTypes inferred;
  if (libonnx.covered) {
    PrepareForChecker(model, graph);
    MEMPLAN_RETURN_IF_ERROR(RunChecker(model, path, graph));
    if (as_written) MoveExternalInitializersToInputs(*as_written);
    inferred = RunOnnxShapeInference(as_written ? *as_written : model, graph);
  } else {
    // A newer model than libonnx knows: the builder's structural checks have run, and every
    // shape comes from memplan's registry rules (which read each op at the model's opset).
    graph.warnings.push_back(LibOnnxSkippedNote(libonnx));
  }
  MEMPLAN_RETURN_IF_ERROR(PropagateShapes(graph, inferred));
  MEMPLAN_RETURN_IF_ERROR(MarkTrainableParameters(graph));
  return graph;
}

}  // namespace memplan
