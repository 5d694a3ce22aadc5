#pragma once
// The one reader of a saved plan: a `memplan analyze --json` object (docs/json_schema.md) read and
// validated once into the plan type the planner's route builds (PlanReport,
// analyzer/report/plan_report.h). `memplan export` and `memplan verify --plan` both read through
// ReadSavedPlan, so a plan file and the plan of this process feed the exporters and verify alike.

#include <nlohmann/json.hpp>
#include "analyzer/report/plan_report.h"
#include "graph/expected.h"

namespace memplan {

// The one reader of a saved plan: the plan object of a `memplan analyze --json` document.
// Accepted spellings (case-insensitive):
//   plan.precision:  "fp32" | "fp16" | "bf16"
//   plan.amp_mode:   "autocast" | "master-weights" | "pure" (optional; read for mixed plans)
//   plan.optimizer:  "sgd" | "momentum" / "sgd-momentum" / "sgd_momentum" | "adam" | "adamw" |
//                    "adafactor"
//   plan.optimizer_impl: "foreach" | "fused" | "for-loop" (optional)
//   plan.zero_grad:  "set_to_none" / "none" (default when absent) | "zero" / "zeros"
//   plan.clip_gradients: true | false (optional)
//   plan.recompute_op_types: {node name: op type} (optional)
//   plan.attention.requested, plan.loss, plan.loss_scaling: "none" | "static" | "dynamic",
//                    plan.loss_terms ([{"output", "loss"}]), plan.fp16_ops, plan.fp32_ops,
//                    bindings: read for verify (all optional)
//   plan.recompute_unit: "node" (default when absent) | "module"; with "module",
//                    plan.recompute_modules (module paths) and plan.checkpointable_modules (>= 0)
//   plan.offload.mode: "none" (default when plan.offload is absent) | "optimizer" |
//                    "optimizer+params" | "activations"
//   plan.fused_loss: true | false (default false)
//   plan.optimizer_in_backward: true | false (default false)
//   plan.loss_dtype: "fp32" | "bf16" | "fp16" (optional; another name reads as not given)
//   plan.loss_chunks: integer >= 0 (optional, default 0)
//   plan.compile: true | false (default false)
//   plan.fusions: "ops" | "all" | "liger" | "none" (optional, default "ops")
//   model.parameter_count, plan.trainable_parameter_count: integers >= 0 (optional)
//   plan.lora:       {"rank": r >= 1, "alpha" (default r), "dropout" (default 0),
//                    "target_modules": [...], "peft_target_modules" (default target_modules)}
//   plan.base_dtype: "fp32" | "bf16" | "fp16" | "int8" | "nf4" (optional)
// Not read: the memory result (MemoryResultFromPlanJson, baseline/memory_result.h, reads it for
// the verbs that compare memory). Errors name the missing or invalid key; the caller says which
// file and verb.
Expected<PlanReport> ReadSavedPlan(const nlohmann::json& plan_json);
// ReadSavedPlan for `memplan export`: an error says the plan cannot be exported and what a plan
// file is expected to be.
Expected<PlanReport> ReadExportPlan(const nlohmann::json& plan_json);

}  // namespace memplan
