#include "graph/local_functions.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memplan {
namespace {

constexpr size_t kMaxNesting = 64;
constexpr int64_t kMaxInlinedNodes = 10'000'000;

using FunctionKey = std::pair<std::string, std::string>;  // (domain, name)
using NodeList = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

std::string Domain(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

std::string Describe(const FunctionKey& key) {
  return key.first.empty() ? key.second : key.first + "." + key.second;
}

class Inliner {
 public:
  explicit Inliner(const onnx::ModelProto& model) {
    for (const onnx::FunctionProto& f : model.functions())
      functions_.emplace(FunctionKey(Domain(f.domain()), f.name()), &f);
    const onnx::GraphProto& g = model.graph();
    for (const auto& v : g.input()) taken_.insert(v.name());
    for (const auto& v : g.output()) taken_.insert(v.name());
    for (const auto& v : g.value_info()) taken_.insert(v.name());
    for (const auto& t : g.initializer()) taken_.insert(t.name());
    for (const auto& n : g.node()) {
      taken_.insert(n.name());
      for (const auto& name : n.input()) taken_.insert(name);
      for (const auto& name : n.output()) taken_.insert(name);
    }
  }

  // Appends `node` to `out`, or the body of the function it calls.
  Status Emit(const onnx::NodeProto& node, NodeList& out) {
    auto callee = functions_.find(FunctionKey(Domain(node.domain()), node.op_type()));
    if (callee == functions_.end()) {
      if (++produced_ > kMaxInlinedNodes)
        return MakeError("inlining the model-local functions makes more than " +
                         std::to_string(kMaxInlinedNodes) + " nodes");
      *out.Add() = node;
      return OkStatus();
    }
    return Expand(node, callee->first, *callee->second, out);
  }

  InlinedFunctions Summary() const {
    InlinedFunctions s;
    s.calls = calls_;
    s.functions = static_cast<int64_t>(called_.size());
    for (const FunctionKey& key : called_) s.names += (s.names.empty() ? "" : ", ") + Describe(key);
    return s;
  }

 private:
  // A name nothing else in the graph uses: `wanted` itself when free.
  std::string Fresh(const std::string& wanted) {
    if (taken_.insert(wanted).second) return wanted;
    for (int64_t i = 1;; ++i) {
      std::string candidate = wanted + "_" + std::to_string(i);
      if (taken_.insert(candidate).second) return candidate;
    }
  }

  Status Expand(const onnx::NodeProto& call, const FunctionKey& key, const onnx::FunctionProto& f,
                NodeList& out) {
    if (std::find(stack_.begin(), stack_.end(), &f) != stack_.end())
      return MakeError("model-local function '" + Describe(key) +
                       "' calls itself, so it cannot be expanded into a training graph");
    if (stack_.size() >= kMaxNesting)
      return MakeError("model-local functions nest more than " + std::to_string(kMaxNesting) +
                       " calls deep (at '" + Describe(key) + "')");
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
      return MakeError("node '" + call.name() + "' calls model-local function '" + Describe(key) +
                       "' with " + std::to_string(call.input_size()) + " inputs and " +
                       std::to_string(call.output_size()) + " outputs; it declares " +
                       std::to_string(f.input_size()) + " and " + std::to_string(f.output_size()));
    ++calls_;
    called_.insert(key);
    const std::string scope = call.name().empty() ? Fresh(f.name()) : call.name();

    // Formal parameters are the call's values; an input the call leaves out stays empty (an
    // omitted optional input), an output it leaves out becomes an internal value.
    std::unordered_map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i) {
      const bool given = i < call.output_size() && !call.output(i).empty();
      rename[f.output(i)] = given ? call.output(i) : Fresh(scope + "/" + f.output(i));
    }
    auto value = [&](const std::string& name) -> std::string {
      if (name.empty()) return name;
      auto it = rename.find(name);
      if (it == rename.end()) it = rename.emplace(name, Fresh(scope + "/" + name)).first;
      return it->second;
    };
    std::unordered_map<std::string, const onnx::AttributeProto*> call_attributes;
    for (const auto& a : call.attribute()) call_attributes.emplace(a.name(), &a);

    stack_.push_back(&f);
    for (const onnx::NodeProto& body : f.node()) {
      onnx::NodeProto copy = body;
      copy.set_name(Fresh(scope + "/" + (body.name().empty() ? body.op_type() : body.name())));
      for (auto& name : *copy.mutable_input()) name = value(name);
      for (auto& name : *copy.mutable_output()) name = value(name);
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> attributes;
      for (const onnx::AttributeProto& a : body.attribute()) {
        if (a.ref_attr_name().empty()) {
          onnx::AttributeProto* kept = attributes.Add();
          *kept = a;
          RenameCaptures(*kept, value);
          continue;
        }
        // A reference the call does not set: the function's default applies, which the 1.12
        // proto cannot carry, so the op's own default stands in (the attribute is left out).
        auto given = call_attributes.find(a.ref_attr_name());
        if (given == call_attributes.end()) continue;
        onnx::AttributeProto* resolved = attributes.Add();
        *resolved = *given->second;
        resolved->set_name(a.name());
      }
      copy.mutable_attribute()->Swap(&attributes);
      // On an error the whole import stops, so the stack needs no unwinding.
      MEMPLAN_RETURN_IF_ERROR(Emit(copy, out));
    }
    stack_.pop_back();
    return OkStatus();
  }

  // A subgraph (If/Loop body) in a function reads the function's values by name: those names
  // follow the renaming; names the subgraph defines itself stay.
  template <class Rename>
  static void RenameCaptures(onnx::AttributeProto& a, Rename& value) {
    auto rename_in = [&](onnx::GraphProto& g) {
      std::unordered_set<std::string> own;
      for (const auto& v : g.input()) own.insert(v.name());
      for (const auto& t : g.initializer()) own.insert(t.name());
      for (const auto& n : g.node())
        for (const auto& name : n.output()) own.insert(name);
      for (auto& n : *g.mutable_node())
        for (auto& name : *n.mutable_input())
          if (!name.empty() && own.count(name) == 0) name = value(name);
      for (auto& v : *g.mutable_output())
        if (own.count(v.name()) == 0) v.set_name(value(v.name()));
    };
    if (a.has_g()) rename_in(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) rename_in(g);
  }

  std::map<FunctionKey, const onnx::FunctionProto*> functions_;
  std::unordered_set<std::string> taken_;  // value and node names in use
  std::set<FunctionKey> called_;
  std::vector<const onnx::FunctionProto*> stack_;  // the calls being expanded, outermost first
  int64_t produced_ = 0;
  int64_t calls_ = 0;
};

// The body's nodes may use domains only the function imports (com.microsoft in a converter's
// layer): the model imports them too, at the function's version.
void ImportFunctionOpsets(onnx::ModelProto& model) {
  std::set<std::string> imported;
  for (const auto& o : model.opset_import()) imported.insert(Domain(o.domain()));
  for (const auto& f : model.functions())
    for (const auto& o : f.opset_import())
      if (imported.insert(Domain(o.domain())).second) *model.add_opset_import() = o;
}

}  // namespace

Expected<InlinedFunctions> InlineLocalFunctions(onnx::ModelProto& model) {
  if (model.functions_size() == 0) return InlinedFunctions{};
  Inliner inliner(model);
  NodeList nodes;
  for (const onnx::NodeProto& node : model.graph().node())
    MEMPLAN_RETURN_IF_ERROR(inliner.Emit(node, nodes));
  ImportFunctionOpsets(model);
  model.mutable_graph()->mutable_node()->Swap(&nodes);
  model.mutable_functions()->Clear();
  return inliner.Summary();
}

}  // namespace memplan
