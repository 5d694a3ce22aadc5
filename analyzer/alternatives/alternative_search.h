#pragma once
// When nothing fits (even micro-batch 1 is over the budget), what would: a fixed set of changes
// to the user's plan flags, each a complete request that the caller plans through the same
// planner as the request itself (`plan` below: the CLI resolves the flags and runs the joint
// search exactly as `memplan analyze` would with them), ranked. This file decides which changes
// to try, in which order, how far the searches go and how the results rank; it plans nothing.
//
// Single changes, each tried on its own (docs/finetuning.md, "When nothing fits"):
//   recompute         --recompute auto, when the flags asked for none
//   optimizer         --optimizer adamw8bit, adafactor, lion (each), when the optimizer is adam
//                     or adamw
//   lora              --lora 16 --base-dtype bf16 (fp16 where the plan is fp16 or the GPU has no
//                     bf16), without --lora; --base-dtype bf16 alone with --lora and no base dtype
//   qlora             --lora 16 --base-dtype nf4 (--base-dtype nf4 alone with --lora)
//   shorter_sequence  --dim S=v/2, v/4, v/8 (the first that fits) when a --dim binds a symbol
//                     that names a sequence (IsSequenceSymbol)
//   offload           --offload optimizer, then optimizer+params (the first that fits), on one
//                     GPU when no offload was asked; host memory is reported, not budgeted
//   allocator         --alloc-conf expandable_segments:True, when the caching allocator ran with
//                     PyTorch's defaults (no --alloc-conf, no --allocator) and the live bytes fit
//                     the budget (live_peak_bytes): only fragmentation is over it
//   sharding          --gpus N --parallel zero3 for the smallest N in 2, 4, ..., 64 (more than
//                     the GPUs asked) that fits; from one GPU, N starts where the parameters and
//                     optimizer state divided by N fit the budget
//   gpu               --gpu G for the smallest GPU of the table (ascending memory, from the one
//                     the infeasible report names) whose plan fits
// Recompute and a shorter sequence shrink activations only: they are not planned when the
// parameters and optimizer state of the plan as asked already exceed the budget.
// Pairs, only when no single change fits the GPU asked (recompute, optimizer, lora, qlora,
// shorter_sequence, offload): adamw8bit, lora and qlora each with --recompute auto (when none was
// asked), then qlora with the shorter-sequence search.
//
// Ranking: the plans that fit first; among them the changes to the run on the GPU asked
// (recompute, optimizer, lora, qlora, offload and their pairs), then a shorter sequence (it
// trains on different samples), then more GPUs, then a larger GPU; within each group the highest
// samples/s first (ties: the smaller peak). The plans that do not fit follow in the same order.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/planning/planner.h"
#include "analyzer/vocabulary/alternative_kind.h"
#include "graph/expected.h"

namespace memplan {

struct AlternativeOptions {
  // LoRA rank of the lora and qlora changes: the r of QLoRA's and PEFT's examples.
  int64_t lora_rank = 16;
  // The sharding search stops here: 64 GPUs is eight 8-GPU nodes.
  int64_t max_gpus = 64;
  // The shorter-sequence search halves the bound value at most this often (down to 1/8):
  // shorter than that trains a different task.
  int sequence_halvings = 3;
};

// The request the alternatives start from.
struct AlternativeContext {
  // The flags as given: only those that differ from the CLI's defaults (an absent optimizer is
  // the default adam), as a CI configuration records them (analyzer/baseline/plan_flags.h).
  PlanFlags asked;
  int64_t budget_bytes = 0;
  // Parameters (+ fp32 masters) and optimizer state of the plan as asked, per rank: they live
  // through the whole step, so no activation change can bring the peak under them.
  int64_t persistent_state_bytes = 0;
  int64_t gpus = 1;                  // data-parallel ranks as asked
  bool gpu_supports_bf16 = false;    // of the GPU asked
  std::string smallest_fitting_gpu;  // InfeasibleReport's; empty when none is large enough
  std::string batch_symbol;          // the model's batch symbol: a --dim on it is no sequence
  // The live bytes of the plan as asked at its smallest micro-batch, when the caching model
  // planned it: within the budget, what does not fit is the allocator's fragmentation, and the
  // allocator change is tried. nullopt: not tried.
  std::optional<int64_t> live_peak_bytes;
};

// What the caller's planner made of one complete set of flags.
struct AlternativePlan {
  bool fits = false;
  PlanCandidate chosen;  // micro-batch, accumulation, precision, recompute, peak, time
  int64_t budget_bytes = 0;
  int64_t persistent_state_bytes = 0;  // as AlternativeContext's, for this plan
  std::string gpu;                     // the GPU's name ("A100-80GB", "generic 24.0 GiB")
  int64_t gpus = 1;                    // data-parallel ranks
};

// Plans `flags`: the asked flags with `change` overlaid (`change` alone is for progress lines).
// An error is a change the CLI refuses for this model (no LoRA target, a global batch N GPUs
// cannot split): recorded as not planned.
using PlanAlternativeFn =
    std::function<Expected<AlternativePlan>(const PlanFlags& flags, const PlanFlags& change)>;

struct Alternative {
  std::vector<AlternativeKind> kinds;  // one change, or two for a pair
  PlanFlags change;                    // only the flags it sets (replacing the asked ones)
  AlternativePlan plan;
};

struct SkippedAlternative {
  std::vector<AlternativeKind> kinds;
  PlanFlags change;    // what would have been planned (nothing set: no candidate at all)
  std::string reason;  // a sentence: why it was not planned
};

struct AlternativeSearch {
  std::vector<Alternative> planned;  // ranked (RankAlternatives)
  std::vector<SkippedAlternative> skipped;
  int64_t plans = 0;  // requests planned, the searches' intermediate steps included
};

// Runs the search. Never fails: a change `plan` refuses is listed under `skipped`.
AlternativeSearch SearchAlternatives(const AlternativeContext& context,
                                     const AlternativeOptions& options,
                                     const PlanAlternativeFn& plan);

// `memplan explain SNAPSHOT MODEL.onnx` (issue 41): what would have fit a run that ran out of
// memory, at the device's capacity. The run's own knobs, each a single change planned by `plan`
// (the caller resolves the flags as the run's plan, the micro-batch pinned to the run's):
//   micro_batch  --micro-batch m/2, m/4, ..., 1 with --global-batch m * k * gpus (the run's global
//                batch kept by more accumulation steps): the largest that fits, or 1
//   recompute    --recompute auto, when the flags asked for none
//   precision    --precision bf16 (fp16 where the GPU has no bf16), when the flags asked fp32
//   fused_loss   --fused-loss, when not asked (a model without an LM head: not planned, the CLI's
//                message says why)
//   allocator    --alloc-conf expandable_segments:True, then max_split_size_mb:N, when the
//                caching allocator ran with PyTorch's defaults: N is the OOM request in MiB
//                (rounded down; above PyTorch's floor of 20), so no free block of the request's
//                size is split by a smaller request (CUDACachingAllocator's should_split keeps
//                oversize blocks whole)
// Every change is planned and listed whether it fits or not (its predicted peak is the answer to
// "would it have fit"), ranked as SearchAlternatives ranks.
struct OomRun {
  int64_t micro_batch = 1;         // the run's
  int64_t accumulation_steps = 1;  // the run's
  int64_t oom_request_bytes = 0;   // the request that failed; 0 without an OOM
};
AlternativeSearch SearchOomAlternatives(const AlternativeContext& context, const OomRun& run,
                                        const PlanAlternativeFn& plan);

// Sorts `alternatives` into the ranking described above (stable).
void RankAlternatives(std::vector<Alternative>& alternatives);

// Whether a symbol bound by --dim names a sequence length: its name, lower case, contains "seq",
// "len", "ctx", "context" or "token" (seq, seq_len, sequence_length, n_ctx, num_tokens).
bool IsSequenceSymbol(std::string_view name);

// The asked flags an alternative's change replaces (same flag, other value; a --dim of the same
// symbol), e.g. --recompute none for --recompute auto. Nothing set when it only adds flags.
PlanFlags ReplacedFlags(const PlanFlags& asked, const PlanFlags& change);

}  // namespace memplan
