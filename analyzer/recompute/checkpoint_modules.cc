#include "analyzer/recompute/checkpoint_modules.h"

#include <algorithm>
#include <cctype>

namespace memplan {
namespace {

std::vector<std::string_view> SplitOnSlash(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('/', start);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

bool IsRepeatedBlockPath(std::string_view module_path) {
  size_t dot = module_path.rfind('.');
  std::string_view last = dot == std::string_view::npos ? module_path : module_path.substr(dot + 1);
  if (last.empty()) return false;
  return std::all_of(last.begin(), last.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

std::string OpTypeOfNodeName(std::string_view onnx_node_name) {
  size_t slash = onnx_node_name.rfind('/');
  std::string_view last =
      slash == std::string_view::npos ? onnx_node_name : onnx_node_name.substr(slash + 1);
  size_t underscore = last.rfind('_');
  if (underscore != std::string_view::npos && underscore + 1 < last.size() &&
      std::all_of(last.begin() + static_cast<std::ptrdiff_t>(underscore) + 1, last.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    last = last.substr(0, underscore);
  return std::string(last);
}

std::vector<std::string> ModuleScopesOfNode(std::string_view onnx_node_name) {
  if (onnx_node_name.empty() || onnx_node_name.front() != '/') return {};
  std::vector<std::string_view> parts = SplitOnSlash(onnx_node_name.substr(1));
  // The last part is the op type ("Conv", "MatMul_1"); everything before it is a scope.
  if (parts.size() < 2) return {};
  std::vector<std::string> paths;
  std::string_view previous_segment;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string_view segment = parts[i];
    if (segment.empty()) return {};
    std::string path;
    if (paths.empty()) {
      path = std::string(segment);
    } else if (segment.size() > previous_segment.size() &&
               segment.substr(0, previous_segment.size()) == previous_segment &&
               segment[previous_segment.size()] == '.') {
      // Qualified from the same base as the previous segment: replace that segment's text.
      const std::string& parent = paths.back();
      path = parent.substr(0, parent.size() - previous_segment.size()) + std::string(segment);
    } else {
      path = paths.back() + "." + std::string(segment);
    }
    paths.push_back(std::move(path));
    previous_segment = segment;
  }
  return paths;
}

std::optional<std::string> CheckpointModuleForNode(std::string_view onnx_node_name) {
  std::vector<std::string> scopes = ModuleScopesOfNode(onnx_node_name);
  if (scopes.empty()) return std::nullopt;
  for (const std::string& scope : scopes)
    if (IsRepeatedBlockPath(scope)) return scope;
  return scopes.back();
}

CheckpointModules GroupRecomputeByModule(const std::vector<std::string>& recompute_nodes) {
  CheckpointModules result;
  for (const std::string& node : recompute_nodes) {
    std::optional<std::string> module = CheckpointModuleForNode(node);
    if (!module) {
      result.unmapped_nodes.push_back(node);
      continue;
    }
    auto it = std::find_if(result.modules.begin(), result.modules.end(),
                           [&](const CheckpointModule& m) { return m.module_path == *module; });
    if (it == result.modules.end()) {
      result.modules.push_back(CheckpointModule{*module, {node}});
    } else {
      it->nodes.push_back(node);
    }
  }
  return result;
}

CheckpointModules GroupRecomputeByPlannedModules(const std::vector<std::string>& modules,
                                                 const std::vector<std::string>& recompute_nodes) {
  CheckpointModules result;
  for (const std::string& path : modules) result.modules.push_back(CheckpointModule{path, {}});
  for (const std::string& node : recompute_nodes) {
    std::optional<std::string> module = CheckpointModuleForNode(node);
    auto it =
        std::find_if(result.modules.begin(), result.modules.end(),
                     [&](const CheckpointModule& m) { return module && m.module_path == *module; });
    if (it == result.modules.end()) {
      result.unmapped_nodes.push_back(node);
    } else {
      it->nodes.push_back(node);
    }
  }
  return result;
}

}  // namespace memplan
