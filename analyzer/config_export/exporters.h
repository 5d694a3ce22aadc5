#pragma once
// One renderer per ExportTarget (each in its own <target>_export.cc). They receive a validated
// plan and validated options and cannot fail; ExportConfig (export_config.cc) dispatches.

#include <string>

#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/export_plan.h"

namespace memplan::config_export {

std::string ExportDeepSpeed(const ExportPlan& plan, const ExportOptions& options);
std::string ExportHfTrainerPython(const ExportPlan& plan, const ExportOptions& options);
std::string ExportHfTrainerJson(const ExportPlan& plan, const ExportOptions& options);
std::string ExportAccelerate(const ExportPlan& plan, const ExportOptions& options);
std::string ExportLightning(const ExportPlan& plan, const ExportOptions& options);
std::string ExportPytorchLoop(const ExportPlan& plan, const ExportOptions& options);
// The PyTorch target for a ddp, fsdp or hybrid-shard plan: a torchrun script
// (torchrun_export.cc).
std::string ExportTorchrunScript(const ExportPlan& plan, const ExportOptions& options);

// The recompute part the PyTorch loop and the torchrun script share: the planned modules
// (CHECKPOINTED_MODULES), for a node plan the torch >= 2.4 selective policy over the ATen ops of
// its nodes (RECOMPUTED_ATEN_OPS), and enable_recompute(model). The imports it needs first
// (functools and re for a node plan; empty otherwise).
std::string PytorchRecomputeSection(const ExportPlan& plan);
std::string PytorchRecomputeImports(const ExportPlan& plan);
// A torchtune recipe config YAML (torchtune_export.cc).
std::string ExportTorchtune(const ExportPlan& plan, const ExportOptions& options);

}  // namespace memplan::config_export
