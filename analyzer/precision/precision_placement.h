#pragma once
// FP16/BF16 placement: which dtype every node of the graph computes in under mixed precision, and
// why. The policy is torch.autocast's CUDA lists, read from the op registry (OpSchema::amp, each
// entry citing aten/src/ATen/autocast_mode.cpp):
//
//   category (registry)  autocast list                     dtype
//   kFp16Safe            lower_precision_fp (mm, conv...)  the working dtype (fp16 or bf16)
//   kFp32Required        fp32, fp32_set_opt_dtype          fp32
//   kFollowInputs        not listed / promote              widest floating dtype among the node's
//                                                          activation inputs (parameters excluded:
//                                                          they are read as whichever copy fits)
//
// --fp32-ops / --fp16-ops override the policy per op type ("Softmax") or ONNX node name; a node
// name beats an op type when both name the same node. The result fills
// ProgramOptions::node_dtype (ApplyPlacement in derivation/program_derivation.h), so the
// derivation runs exactly this placement.
//
// Usage:
//   PrecisionOptions options;
//   options.mode = Precision::kFp16;
//   MEMPLAN_TRY(options.force_fp32, ParseOpList("LayerNormalization,attn_proj", "--fp32-ops"));
//   MEMPLAN_TRY(PrecisionPlacement placement, PlacePrecision(graph, options));
//   ApplyPlacement(placement, program_options);

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/precision/amp_regime.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/program/training_program.h"
#include "graph/dtype.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

class OpRegistry;

struct PrecisionOptions {
  // The mixed-precision mode to place; kFp32 places nothing (every node keeps its graph dtype).
  Precision mode = Precision::kFp16;
  // The regime (analyzer/precision/amp_regime.h): pure bf16 runs every node in bf16; autocast
  // sees parameters in fp32 where an op casts none.
  AmpMode amp_mode = AmpMode::kMasterWeights;
  // Op types or ONNX node names forced to fp32 / to the working dtype (fp16, or bf16 in bf16
  // mode). An entry that names no node, or only nodes that cannot be placed (views, Cast nodes,
  // nodes touching no floating tensor), is an error; an entry in both lists is an error.
  std::vector<std::string> force_fp32;
  std::vector<std::string> force_fp16;
  // nullopt = the mode's default (DefaultLossScaling, analyzer/precision/precision_policy.h):
  // dynamic for fp16, none for bf16. Ignored in fp32 mode, where there is nothing to scale.
  std::optional<LossScaling> loss_scaling;
  // The op registry to read; null = OpRegistry::Get().
  const OpRegistry* registry = nullptr;
};

// Why a node computes in its dtype.
#define MEMPLAN_PLACEMENT_REASONS(X)                                                             \
  /* fp32 mode, a node that does not run (constant folding), a Cast node, or one that touches */ \
  /* no floating tensor: it keeps its graph dtypes */                                            \
  X(kNotPlaced, "not-placed")                                                                    \
  /* the registry's kFp16Safe (autocast lower_precision_fp): the working dtype */                \
  X(kFp16Safe, "fp16-safe")                                                                      \
  /* the registry's kFp32Required (autocast fp32 / fp32_set_opt_dtype) */                        \
  X(kFp32Required, "fp32-required")                                                              \
  /* kFollowInputs, or a view: the widest activation input (`decided_by`) */                     \
  X(kFollowsInputs, "follows-inputs")                                                            \
  X(kOverride, "override") /* --fp32-ops / --fp16-ops (`override_entry`) */
MEMPLAN_NAMED_ENUM(PlacementReason, MEMPLAN_PLACEMENT_REASONS);

struct NodePlacement {
  NodeId node;
  DType dtype = DType::kUndefined;  // kUndefined for kNotPlaced
  PlacementReason reason = PlacementReason::kNotPlaced;
  // kFollowsInputs: the activation input whose dtype won (the first of the widest); invalid when
  // the node reads no floating activation and so runs in the working dtype.
  ValueId decided_by;
  std::string override_entry;  // kOverride: the --fp32-ops / --fp16-ops entry that matched
};

struct PrecisionPlacement {
  Precision precision = Precision::kFp32;
  AmpMode amp_mode = AmpMode::kMasterWeights;
  LossScaling loss_scaling;          // resolved: the mode's default when none was asked for
  std::vector<NodePlacement> nodes;  // indexed by NodeId, one per graph node
  // Ready for ProgramOptions::node_dtype: the placed dtype of each node, nullopt for kNotPlaced.
  std::vector<std::optional<DType>> node_dtype;
};

// REQUIRES: graph shapes inferred (dtypes known). Errors: an override entry that matches nothing
// (naming it, with a near spelling when one exists), an entry in both lists, a static loss scale
// that is not positive and finite, a cycle.
Expected<PrecisionPlacement> PlacePrecision(const Graph& graph, const PrecisionOptions& options);

// Splits a --fp32-ops / --fp16-ops value at commas, trimming spaces around each entry. An empty
// text is an empty list; an empty entry ("a,,b", "a,") is an error naming `flag`.
Expected<std::vector<std::string>> ParseOpList(std::string_view text, std::string_view flag);

}  // namespace memplan
