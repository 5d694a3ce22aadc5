#include "graph/proto_name_escaping.h"

#include <string>

#include "graph/utf8_text.h"

namespace memplan {
namespace {

constexpr size_t kLongestEscapedString = 1024;

class NameEscaper {
 public:
  int64_t changed() const { return changed_; }

  void Graph(onnx::GraphProto& graph) {
    Fix(*graph.mutable_name());
    for (auto& node : *graph.mutable_node()) Node(node);
    for (auto* infos : {graph.mutable_input(), graph.mutable_output(), graph.mutable_value_info()})
      for (auto& info : *infos) Fix(*info.mutable_name());
    for (auto& tensor : *graph.mutable_initializer()) Fix(*tensor.mutable_name());
    for (auto& sparse : *graph.mutable_sparse_initializer()) {
      Fix(*sparse.mutable_values()->mutable_name());
      Fix(*sparse.mutable_indices()->mutable_name());
    }
  }

  void Node(onnx::NodeProto& node) {
    Fix(*node.mutable_name());
    Fix(*node.mutable_op_type());
    Fix(*node.mutable_domain());
    for (auto& input : *node.mutable_input()) Fix(input);
    for (auto& output : *node.mutable_output()) Fix(output);
    for (auto& attribute : *node.mutable_attribute()) {
      Fix(*attribute.mutable_name());
      // A long string attribute is a payload (an EPContext cache, a plugin's blob), never a
      // name or a mode memplan prints: left as it is.
      if (attribute.has_s() && attribute.s().size() <= kLongestEscapedString)
        Fix(*attribute.mutable_s());
      for (auto& s : *attribute.mutable_strings())
        if (s.size() <= kLongestEscapedString) Fix(s);
      if (attribute.has_g()) Graph(*attribute.mutable_g());
      for (auto& subgraph : *attribute.mutable_graphs()) Graph(subgraph);
    }
  }

  void Function(onnx::FunctionProto& function) {
    Fix(*function.mutable_name());
    Fix(*function.mutable_domain());
    for (auto& input : *function.mutable_input()) Fix(input);
    for (auto& output : *function.mutable_output()) Fix(output);
    for (auto& node : *function.mutable_node()) Node(node);
  }

 private:
  void Fix(std::string& text) {
    if (IsValidUtf8(text)) return;
    text = EscapeInvalidUtf8(text);
    ++changed_;
  }

  int64_t changed_ = 0;
};

}  // namespace

int64_t EscapeInvalidUtf8Names(onnx::ModelProto& model) {
  NameEscaper escaper;
  escaper.Graph(*model.mutable_graph());
  for (auto& function : *model.mutable_functions()) escaper.Function(function);
  return escaper.changed();
}

}  // namespace memplan
