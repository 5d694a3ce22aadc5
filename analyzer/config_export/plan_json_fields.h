#pragma once
// Typed reads of one field of a saved plan (`memplan analyze --json`), shared by every reader of
// that file (`memplan export`, `memplan verify --plan`). A field of the wrong type is an error
// naming it ('plan.loss' is not a string), never a default and never a JSON exception.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "analyzer/parallel/data_parallel_options.h"
#include "graph/expected.h"
#include "graph/symbols.h"

namespace memplan {

// The schema string every memplan JSON document carries.
inline constexpr const char* kPlanJsonSchema = "memplan/1";

// Fields are named in errors as `where + key`, e.g. where = "plan." gives 'plan.micro_batch'.
Expected<std::string> RequiredPlanString(const nlohmann::json& object, const char* key,
                                         const std::string& where);
Expected<int64_t> RequiredPlanPositiveInt(const nlohmann::json& object, const char* key,
                                          const std::string& where);
// Absent or null: std::nullopt.
Expected<std::optional<std::string>> OptionalPlanString(const nlohmann::json& object,
                                                        const char* key, const std::string& where);
Expected<std::optional<bool>> OptionalPlanBool(const nlohmann::json& object, const char* key,
                                               const std::string& where);
// Absent or null: an empty list.
Expected<std::vector<std::string>> OptionalPlanStringList(const nlohmann::json& object,
                                                          const char* key,
                                                          const std::string& where);

// plan.loss_scale, the loss scaler's (initial) scale; absent or null: std::nullopt. Anything but a
// positive finite number a float32 holds (1e308, 0, -0, a negative) is an error: torch's
// GradScaler keeps its scale as a float32 tensor, and 0 or -0 would zero every gradient.
Expected<std::optional<double>> OptionalPlanLossScale(const nlohmann::json& plan);

// The document's top-level "bindings" (symbol: size), in the file's order; absent or null: none.
// Each size is an integer in [1, 2^63 - 1] (2^63 does not fit int64_t: an error naming it, e.g.
// 'bindings.seq' is not a positive integer).
Expected<std::vector<DimBinding>> PlanBindingsOf(const nlohmann::json& document);

// The document is an object whose "schema" is kPlanJsonSchema and which holds a "plan" object.
Expected<const nlohmann::json*> PlanObjectOf(const nlohmann::json& document);

// The data-parallel plan (docs/multi_gpu.md): plan.parallel names the strategy, plan.gpus the
// ranks, plan.nodes the machines (1 when absent), plan.engine_options the engine settings that
// differ from the defaults (analyzer/parallel/engine_options.h). nullopt: a single-GPU plan.
Expected<std::optional<DataParallelOptions>> OptionalPlanDataParallel(const nlohmann::json& plan);

// plan.tensor_parallel.degree (--tp), 1 when plan.tensor_parallel is absent or null. plan.gpus
// counts every GPU: OptionalPlanDataParallel divides it by this for the data-parallel ranks.
Expected<int64_t> PlanTensorParallelDegree(const nlohmann::json& plan);

}  // namespace memplan
