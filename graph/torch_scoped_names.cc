#include "graph/torch_scoped_names.h"

#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "graph/onnx_metadata.h"

namespace memplan {
namespace {

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

}  // namespace

std::optional<std::vector<std::string>> ParsePythonStringList(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  std::vector<std::string> items;
  size_t i = 1;
  const size_t end = text.size() - 1;
  auto skip_spaces = [&] {
    while (i < end && text[i] == ' ') ++i;
  };
  skip_spaces();
  while (i < end) {
    const char quote = text[i];
    if (quote != '\'' && quote != '"') return std::nullopt;
    const size_t close = text.find(quote, i + 1);
    if (close == std::string_view::npos || close >= end) return std::nullopt;
    std::string_view item = text.substr(i + 1, close - i - 1);
    if (item.find('\\') != std::string_view::npos) return std::nullopt;
    items.emplace_back(item);
    i = close + 1;
    skip_spaces();
    if (i < end) {
      if (text[i] != ',') return std::nullopt;
      ++i;
      skip_spaces();
    }
  }
  return items;
}

std::optional<std::string> TorchScopedName(const std::vector<std::string>& name_scopes,
                                           const std::string& name) {
  // The root module's scope is ''; a list that does not start there is no module stack (torch
  // writes ['_empty_nn_module_stack_from_metadata_hook', 'sym_size_int_3'] for shape nodes).
  if (name_scopes.size() < 2 || !name_scopes.front().empty() || name.empty() ||
      name.find('/') != std::string::npos)
    return std::nullopt;
  std::string scoped;
  std::string parent_path;     // the enclosing module's qualified path
  std::string parent_segment;  // and the segment it was written as
  // The last element is the FX node's own name, not a module.
  for (size_t i = 1; i + 1 < name_scopes.size(); ++i) {
    const std::string& path = name_scopes[i];
    if (path.empty() || path.find('/') != std::string::npos) return std::nullopt;
    std::string segment;
    if (parent_path.empty()) {
      segment = path;
    } else {
      if (path.size() <= parent_path.size() + 1 ||
          path.compare(0, parent_path.size(), parent_path) != 0 || path[parent_path.size()] != '.')
        return std::nullopt;  // not nested in the enclosing module
      const std::string relative = path.substr(parent_path.size() + 1);
      segment = AllDigits(relative) ? parent_segment + "." + relative : relative;
    }
    scoped += "/" + segment;
    parent_path = path;
    parent_segment = segment;
  }
  if (scoped.empty()) return std::nullopt;
  return scoped + "/" + name;
}

std::optional<std::string> TorchScopedName(const onnx::NodeProto& node) {
  std::optional<std::string> scopes = MetadataValue(node, kNodeMetadataField, kTorchNameScopesKey);
  if (!scopes) return std::nullopt;
  std::optional<std::vector<std::string>> parsed = ParsePythonStringList(*scopes);
  if (!parsed) return std::nullopt;
  return TorchScopedName(*parsed, node.name());
}

int64_t NameNodesByTorchScopes(onnx::GraphProto& graph) {
  std::unordered_set<std::string> taken;
  for (const auto& node : graph.node()) taken.insert(node.name());
  int64_t renamed = 0;
  for (auto& node : *graph.mutable_node()) {
    std::optional<std::string> scoped = TorchScopedName(node);
    if (!scoped || !taken.insert(*scoped).second) continue;
    node.set_name(*scoped);
    ++renamed;
  }
  return renamed;
}

}  // namespace memplan
