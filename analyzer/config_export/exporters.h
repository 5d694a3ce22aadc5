#pragma once
// One renderer per ExportTarget (each in its own <target>_export.cc). They receive a validated
// plan and validated options and cannot fail; ExportConfig (export_config.cc) dispatches.

#include <string>

#include "analyzer/config_export/export_config.h"
#include "analyzer/report/plan_report.h"

namespace memplan::config_export {

std::string ExportDeepSpeed(const PlanReport& plan, const ExportOptions& options);
std::string ExportHfTrainerPython(const PlanReport& plan, const ExportOptions& options);
std::string ExportHfTrainerJson(const PlanReport& plan, const ExportOptions& options);
std::string ExportAccelerate(const PlanReport& plan, const ExportOptions& options);
std::string ExportLightning(const PlanReport& plan, const ExportOptions& options);
std::string ExportPytorchLoop(const PlanReport& plan, const ExportOptions& options);
// The PyTorch target for a ddp, fsdp or hybrid-shard plan: a torchrun script
// (torchrun_export.cc).
std::string ExportTorchrunScript(const PlanReport& plan, const ExportOptions& options);

// The recompute part the PyTorch loop and the torchrun script share: the planned modules
// (CHECKPOINTED_MODULES), for a node plan the torch >= 2.4 selective policy over the ATen ops of
// its nodes (RECOMPUTED_ATEN_OPS), and enable_recompute(model). The imports it needs first
// (functools and re for a node plan; empty otherwise).
std::string PytorchRecomputeSection(const PlanReport& plan);
std::string PytorchRecomputeImports(const PlanReport& plan);
// A torchtune recipe config YAML (torchtune_export.cc).
std::string ExportTorchtune(const PlanReport& plan, const ExportOptions& options);

}  // namespace memplan::config_export
