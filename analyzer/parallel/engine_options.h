#pragma once
// The engine settings a user may set for a data-parallel plan (`--engine-options`,
// `plan.engine_options` in JSON), each under the name its engine gives it, so a value copied from
// a DeepSpeed config or a DDP/FSDP call means here what it means there. One table: the CLI, the
// plan JSON (only values that differ from the defaults are written) and its readers (export,
// verify --plan) all go through it.
//
//   bucket_cap_mb                       DDP bucket_cap_mb (MiB, default 25)
//   gradient_as_bucket_view             DDP gradient_as_bucket_view (true|false, default false)
//   reduce_bucket_size                  DeepSpeed ZeRO reduce_bucket_size (elements, 5e8)
//   allgather_bucket_size               DeepSpeed ZeRO allgather_bucket_size (elements, 5e8)
//   stage3_param_persistence_threshold  DeepSpeed ZeRO-3 (elements, 1e5; 0 allowed)
//   stage3_prefetch_bucket_size         DeepSpeed ZeRO-3 (elements, 5e7)
//   stage3_max_live_parameters          DeepSpeed ZeRO-3 (elements, 1e9)
//   min_num_params                      FSDP size_based_auto_wrap_policy (elements, 1e8; 0 allowed)
//   auto_wrap_policy                    FSDP: size (default) | transformer (a unit per block)
//   reshard_after_forward               FSDP (true|false, default true; false is SHARD_GRAD_OP)
//   prefetch_units                      units gathered ahead of the computing one (1; 0 allowed)
//
// Text form: comma-separated name=value pairs ("bucket_cap_mb=50,reshard_after_forward=false").

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "analyzer/parallel/data_parallel_options.h"
#include "graph/expected.h"

namespace memplan {

// Applies "name=value,name=value". Errors (one line naming the setting): an unknown name (with
// the known ones), a value that is not a whole number in range or not true/false.
Status ApplyEngineOptions(std::string_view text, DataParallelOptions& options);

// The settings of `options` that differ from the defaults, as {name: value} (integers and
// booleans as the engine writes them); empty when none does.
nlohmann::ordered_json EngineOptionsToJson(const DataParallelOptions& options);
// Reads what EngineOptionsToJson wrote. Errors name the field ('plan.engine_options.x').
Status EngineOptionsFromJson(const nlohmann::json& object, DataParallelOptions& options);

}  // namespace memplan
