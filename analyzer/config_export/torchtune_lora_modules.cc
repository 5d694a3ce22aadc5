#include "analyzer/config_export/torchtune_lora_modules.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>

namespace memplan::config_export {
namespace {

// What a linear layer is to torchtune's switches, by the tail of its module path.
enum class Role { kQuery, kKey, kValue, kQkv, kOutputProj, kMlp, kHead };

struct NameRole {
  std::string_view tail;  // the module path ends with "." + tail, or is tail
  Role role;
  // MLP projections: the family's name and how many projections it has (torchtune adapts them
  // all with apply_lora_to_mlp).
  std::string_view family = "";
  int family_size = 0;
};

// Longer tails first where one is the end of another ("attention.output.dense" before
// "output.dense").
constexpr std::array<NameRole, 29> kRoles = {{
    {"attention.output.dense", Role::kOutputProj},  // BERT's attention output
    {"attn.c_proj", Role::kOutputProj},             // GPT-2
    {"attn.proj", Role::kOutputProj},               // timm's ViT, nanoGPT-style blocks
    {"mlp.c_proj", Role::kMlp, "gpt2", 2},
    {"mlp.c_fc", Role::kMlp, "gpt2", 2},
    {"intermediate.dense", Role::kMlp, "bert", 2},
    {"output.dense", Role::kMlp, "bert", 2},  // BERT's MLP output (not the attention's: above)
    {"q_proj", Role::kQuery},
    {"query", Role::kQuery},
    {"k_proj", Role::kKey},
    {"key", Role::kKey},
    {"v_proj", Role::kValue},
    {"value", Role::kValue},
    {"qkv_proj", Role::kQkv},
    {"qkv", Role::kQkv},  // timm's attn.qkv
    {"c_attn", Role::kQkv},
    {"query_key_value", Role::kQkv},
    {"o_proj", Role::kOutputProj},
    {"out_proj", Role::kOutputProj},
    {"output_proj", Role::kOutputProj},
    {"gate_proj", Role::kMlp, "llama", 3},
    {"up_proj", Role::kMlp, "llama", 3},
    {"down_proj", Role::kMlp, "llama", 3},
    {"w1", Role::kMlp, "torchtune", 3},
    {"w2", Role::kMlp, "torchtune", 3},
    {"w3", Role::kMlp, "torchtune", 3},
    {"fc1", Role::kMlp, "fc", 2},
    {"fc2", Role::kMlp, "fc", 2},
    {"lm_head", Role::kHead},
}};

bool EndsWithTail(std::string_view path, std::string_view tail) {
  if (path == tail) return true;
  return path.size() > tail.size() && path.substr(path.size() - tail.size()) == tail &&
         path[path.size() - tail.size() - 1] == '.';
}

}  // namespace

TorchtuneLoraModules TorchtuneLoraModulesOf(const std::vector<std::string>& module_paths) {
  TorchtuneLoraModules result;
  std::set<Role> attention;
  std::map<std::string_view, std::set<std::string_view>> mlp_seen;  // family -> tails
  std::map<std::string_view, int> family_size;
  for (const std::string& path : module_paths) {
    const NameRole* match = nullptr;
    for (const NameRole& role : kRoles) {
      if (EndsWithTail(path, role.tail)) {
        match = &role;
        break;
      }
    }
    // torchtune's own head is the top-level "output" module.
    if (match == nullptr && path == "output") {
      result.output = true;
      continue;
    }
    if (match == nullptr) {
      if (std::find(result.unmapped.begin(), result.unmapped.end(), path) == result.unmapped.end())
        result.unmapped.push_back(path);
      continue;
    }
    switch (match->role) {
      case Role::kQkv:
        attention.insert({Role::kQuery, Role::kKey, Role::kValue});
        break;
      case Role::kMlp:
        result.mlp = true;
        mlp_seen[match->family].insert(match->tail);
        family_size[match->family] = match->family_size;
        break;
      case Role::kHead:
        result.output = true;
        break;
      default:
        attention.insert(match->role);
    }
  }
  const std::array<std::pair<Role, const char*>, 4> order = {{{Role::kQuery, "q_proj"},
                                                              {Role::kKey, "k_proj"},
                                                              {Role::kValue, "v_proj"},
                                                              {Role::kOutputProj, "output_proj"}}};
  for (const auto& [role, name] : order)
    if (attention.count(role)) result.attention.push_back(name);
  for (const auto& [family, tails] : mlp_seen)
    if (static_cast<int>(tails.size()) < family_size[family]) result.partial_mlp = true;
  return result;
}

}  // namespace memplan::config_export
