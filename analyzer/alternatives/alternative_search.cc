#include "analyzer/alternatives/alternative_search.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "analyzer/baseline/pinned_plan.h"
#include "analyzer/cost/gpu_specs.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/vocabulary/enum_table.h"
#include "analyzer/vocabulary/recompute_choice.h"

namespace memplan {
namespace {

// The value a flag has in `asked`, or the CLI's default when it was not given.
std::string AskedText(const PlanFlags& asked, std::optional<std::string> PlanFlags::*field,
                      std::string_view key) {
  if (asked.*field) return *(asked.*field);
  return std::string(PlanFlagWithKey(key).cli_default);
}

// Ranking groups, in order: the run on the GPU asked (group 0, every kind not listed), a shorter
// sequence, more GPUs, a larger GPU.
constexpr EnumTable<AlternativeKind, int, 3> kRankingGroups = {{
    {AlternativeKind::kShorterSequence, 1},
    {AlternativeKind::kSharding, 2},
    {AlternativeKind::kLargerGpu, 3},
}};

int GroupOf(AlternativeKind kind) { return ValueOr(kRankingGroups, kind, 0); }

int GroupOf(const std::vector<AlternativeKind>& kinds) {
  int group = 0;
  for (AlternativeKind k : kinds) group = std::max(group, GroupOf(k));
  return group;
}

// The mutable state of one search; SearchAlternatives is the facade.
class AlternativeSearcher {
 public:
  AlternativeSearcher(const AlternativeContext& context, const AlternativeOptions& options,
                      const PlanAlternativeFn& plan)
      : context_(context), options_(options), plan_(plan) {}

  // SearchOomAlternatives' changes (alternative_search.h).
  AlternativeSearch RunOom(const OomRun& run) {
    MicroBatch(run);
    if (AskedText(context_.asked, &PlanFlags::recompute, "recompute") ==
        RecomputeChoiceName(RecomputeChoice::kNone))
      Try({AlternativeKind::kRecompute}, RecomputeOn());
    if (AskedText(context_.asked, &PlanFlags::precision, "precision") == "fp32")
      Try({AlternativeKind::kPrecision},
          Change(&PlanFlags::precision, context_.gpu_supports_bf16 ? "bf16" : "fp16"));
    if (!context_.asked.fused_loss) {
      PlanFlags fused;
      fused.fused_loss = true;
      Try({AlternativeKind::kFusedLoss}, fused);
    }
    if (AskedText(context_.asked, &PlanFlags::allocator, "allocator") == "caching" &&
        !context_.asked.alloc_conf) {
      Try({AlternativeKind::kAllocator},
          Change(&PlanFlags::alloc_conf, "expandable_segments:True"));
      if (run.oom_request_bytes > 0) {
        constexpr int64_t kMiB = int64_t{1} << 20;
        constexpr int64_t kPytorchFloorMb = 20;  // parseMaxSplitSize: above 20 MiB
        const int64_t mb = std::max(kPytorchFloorMb + 1, run.oom_request_bytes / kMiB);
        Try({AlternativeKind::kAllocator},
            Change(&PlanFlags::alloc_conf, "max_split_size_mb:" + std::to_string(mb)));
      }
    }
    RankAlternatives(result_.planned);
    return std::move(result_);
  }

  AlternativeSearch Run() {
    const std::optional<PlanFlags> lora = LoraChange(/*quantized=*/false);
    const std::optional<PlanFlags> qlora = LoraChange(/*quantized=*/true);
    const bool recompute_applies = AskedText(context_.asked, &PlanFlags::recompute, "recompute") ==
                                   RecomputeChoiceName(RecomputeChoice::kNone);

    // Single changes on the GPU asked.
    if (recompute_applies && ActivationsCanHelp({AlternativeKind::kRecompute}, RecomputeOn(),
                                                context_.persistent_state_bytes))
      Try({AlternativeKind::kRecompute}, RecomputeOn());
    for (const PlanFlags& change : OptimizerChanges()) Try({AlternativeKind::kOptimizer}, change);
    if (lora) Try({AlternativeKind::kLora}, *lora);
    std::optional<AlternativePlan> qlora_plan;
    if (qlora) qlora_plan = Try({AlternativeKind::kQlora}, *qlora);
    ShorterSequence({AlternativeKind::kShorterSequence}, PlanFlags{},
                    context_.persistent_state_bytes);
    Offload();
    if (AllocatorApplies())
      Try({AlternativeKind::kAllocator},
          Change(&PlanFlags::alloc_conf, "expandable_segments:True"));

    // Pairs, when no single change fits the GPU asked.
    if (!AnyFitsOnGpuAsked()) {
      if (recompute_applies) {
        PlanFlags eight_bit = Change(&PlanFlags::optimizer, "adamw8bit");
        if (OptimizerApplies())
          Try({AlternativeKind::kOptimizer, AlternativeKind::kRecompute},
              OverlayPlanFlags(eight_bit, RecomputeOn()));
        if (lora)
          Try({AlternativeKind::kLora, AlternativeKind::kRecompute},
              OverlayPlanFlags(*lora, RecomputeOn()));
        if (qlora)
          Try({AlternativeKind::kQlora, AlternativeKind::kRecompute},
              OverlayPlanFlags(*qlora, RecomputeOn()));
      }
      if (qlora && qlora_plan)
        ShorterSequence({AlternativeKind::kQlora, AlternativeKind::kShorterSequence}, *qlora,
                        qlora_plan->persistent_state_bytes);
    }

    // More hardware.
    Sharding();
    LargerGpu();
    RankAlternatives(result_.planned);
    return std::move(result_);
  }

 private:
  static PlanFlags Change(std::optional<std::string> PlanFlags::*field, std::string value) {
    PlanFlags change;
    change.*field = std::move(value);
    return change;
  }

  static PlanFlags RecomputeOn() {
    return Change(&PlanFlags::recompute, std::string(RecomputeChoiceName(RecomputeChoice::kAuto)));
  }

  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (issue 41 item 5): the caching allocator maps
  // one growing segment per stream and pool instead of a segment per large request, so the
  // fragmentation between segments goes (analyzer/simulation/expandable_allocator.h). Tried where
  // the plan ran the caching allocator with PyTorch's defaults.
  bool AllocatorApplies() const {
    return AskedText(context_.asked, &PlanFlags::allocator, "allocator") == "caching" &&
           !context_.asked.alloc_conf && context_.live_peak_bytes &&
           *context_.live_peak_bytes <= context_.budget_bytes;
  }

  bool OptimizerApplies() const {
    const std::string optimizer = AskedText(context_.asked, &PlanFlags::optimizer, "optimizer");
    return optimizer == "adam" || optimizer == "adamw";
  }

  // bitsandbytes' 8-bit AdamW (2 bytes of state per element), transformers' Adafactor (factored
  // second moment, no first), Lion (one moment): each a single change.
  std::vector<PlanFlags> OptimizerChanges() const {
    if (!OptimizerApplies()) return {};
    std::vector<PlanFlags> changes;
    for (const char* optimizer : {"adamw8bit", "adafactor", "lion"})
      changes.push_back(Change(&PlanFlags::optimizer, optimizer));
    return changes;
  }

  // The 16-bit format a frozen base is stored in: the plan's 16-bit format when --precision
  // fixes one, else bf16 where the GPU has it (as --precision auto would compute), fp16 otherwise.
  std::string SixteenBitBase() const {
    const std::string precision = AskedText(context_.asked, &PlanFlags::precision, "precision");
    if (precision == "fp16" || precision == "bf16") return precision;
    return context_.gpu_supports_bf16 ? "bf16" : "fp16";
  }

  // lora: adapters with a 16-bit frozen base; qlora: with an nf4 base. nullopt when the flags
  // already have that much (an nf4 base; for lora any base dtype).
  std::optional<PlanFlags> LoraChange(bool quantized) const {
    const PlanFlags& asked = context_.asked;
    const std::string base = quantized ? "nf4" : SixteenBitBase();
    if (asked.base_dtype == "nf4" || (!quantized && asked.base_dtype)) return std::nullopt;
    PlanFlags change = Change(&PlanFlags::base_dtype, base);
    if (!asked.lora) change.lora = options_.lora_rank;
    return change;
  }

  // Recompute and a shorter sequence shrink activations only. False (and recorded as skipped)
  // when `persistent` bytes of the plan they would change already exceed the budget.
  bool ActivationsCanHelp(std::vector<AlternativeKind> kinds, const PlanFlags& change,
                          int64_t persistent) {
    if (persistent <= context_.budget_bytes) return true;
    result_.skipped.push_back({std::move(kinds), change,
                               "the parameters and optimizer state alone (" +
                                   FormatBytes(persistent) + ") exceed the budget (" +
                                   FormatBytes(context_.budget_bytes) +
                                   "); this changes activations only"});
    return false;
  }

  // Plans asked + change. Records the plan (when `record`) or the refusal; the plan on success.
  std::optional<AlternativePlan> Try(std::vector<AlternativeKind> kinds, const PlanFlags& change,
                                     bool record = true) {
    ++result_.plans;
    Expected<AlternativePlan> planned = plan_(OverlayPlanFlags(context_.asked, change), change);
    if (!planned.ok()) {
      result_.skipped.push_back({std::move(kinds), change, planned.error().message});
      return std::nullopt;
    }
    if (record) result_.planned.push_back({std::move(kinds), change, *planned});
    return *planned;
  }

  // A search over a sequence of changes: the first whose plan fits is recorded, or the last one
  // planned when none does. Stops at the first change the planner refuses (recorded as skipped
  // when nothing was planned before it).
  void SearchChanges(const std::vector<AlternativeKind>& kinds,
                     const std::vector<PlanFlags>& changes) {
    std::optional<Alternative> last;
    for (const PlanFlags& change : changes) {
      const size_t skipped = result_.skipped.size();
      std::optional<AlternativePlan> planned = Try(kinds, change, /*record=*/false);
      if (!planned) {
        if (last) result_.skipped.resize(skipped);  // the search went as far as it could
        break;
      }
      last = Alternative{kinds, change, *planned};
      if (planned->fits) break;
    }
    if (last) result_.planned.push_back(std::move(*last));
  }

  // --micro-batch m/2, m/4, ..., 1 at the run's global batch: the first that fits.
  void MicroBatch(const OomRun& run) {
    std::vector<PlanFlags> changes;
    const int64_t global = run.micro_batch * run.accumulation_steps * context_.gpus;
    for (int64_t m = run.micro_batch / 2; m >= 1; m /= 2) {
      PlanFlags change;
      change.micro_batch = m;
      change.global_batch = global;
      changes.push_back(std::move(change));
      if (m == 1) break;
    }
    if (changes.empty()) {
      result_.skipped.push_back(
          {{AlternativeKind::kMicroBatch}, PlanFlags{}, "the run's micro-batch is already 1"});
      return;
    }
    SearchChanges({AlternativeKind::kMicroBatch}, changes);
  }

  // --dim S=v/2, v/4, ... for the first --dim that names a sequence (on top of `base`).
  void ShorterSequence(const std::vector<AlternativeKind>& kinds, const PlanFlags& base,
                       int64_t persistent) {
    for (const auto& [name, value] : context_.asked.dims) {
      if (name == context_.batch_symbol || !IsSequenceSymbol(name)) continue;
      std::vector<PlanFlags> changes;
      int64_t shorter = value;
      for (int i = 0; i < options_.sequence_halvings && shorter / 2 >= 1; ++i) {
        shorter /= 2;
        PlanFlags change = base;
        change.dims[name] = shorter;
        changes.push_back(std::move(change));
      }
      if (changes.empty() || !ActivationsCanHelp(kinds, changes.front(), persistent)) return;
      SearchChanges(kinds, changes);
      return;
    }
  }

  // --offload optimizer, then optimizer+params: the first that fits (host memory is not
  // budgeted). One GPU only (memplan plans offload for one GPU), and only where none was asked.
  void Offload() {
    if (context_.gpus != 1) return;
    if (AskedText(context_.asked, &PlanFlags::offload, "offload") != "none") return;
    SearchChanges({AlternativeKind::kOffload}, {Change(&PlanFlags::offload, "optimizer"),
                                                Change(&PlanFlags::offload, "optimizer+params")});
  }

  // --gpus N --parallel zero3 for N = 2, 4, ... up to max_gpus, more than the GPUs asked. On one
  // GPU asked, N starts where the sharded parameters and optimizer state fit the budget: zero3
  // keeps at least 1/N of them on every rank (ceil(elements / N) per parameter). On several GPUs
  // with a fixed strategy other than zero3, zero3 on the same GPUs is tried first: sharding more
  // on the GPUs one has comes before buying more.
  void Sharding() {
    const bool one_gpu = context_.gpus == 1;
    std::vector<PlanFlags> changes;
    const std::string asked = AskedText(context_.asked, &PlanFlags::parallel, "parallel");
    if (!one_gpu && !asked.empty() && asked != "auto" && asked != "zero3")
      changes.push_back(Change(&PlanFlags::parallel, "zero3"));
    for (int64_t n = 2; n <= options_.max_gpus; n *= 2) {
      if (n <= context_.gpus) continue;
      if (one_gpu && context_.persistent_state_bytes / n > context_.budget_bytes) continue;
      PlanFlags change = Change(&PlanFlags::parallel, "zero3");
      change.gpus = n;
      changes.push_back(std::move(change));
    }
    if (!changes.empty()) {
      SearchChanges({AlternativeKind::kSharding}, changes);
    } else if (one_gpu) {
      result_.skipped.push_back({{AlternativeKind::kSharding},
                                 PlanFlags{},
                                 "the parameters and optimizer state (" +
                                     FormatBytes(context_.persistent_state_bytes) +
                                     ") do not fit the budget even sharded over " +
                                     std::to_string(options_.max_gpus) + " GPUs"});
    }
  }

  // --gpu G for the GPUs of the table from the smallest one the infeasible report names up, in
  // ascending memory (ties in table order).
  void LargerGpu() {
    if (context_.smallest_fitting_gpu.empty()) {
      result_.skipped.push_back({{AlternativeKind::kLargerGpu},
                                 PlanFlags{},
                                 "no GPU in memplan's table has enough memory"});
      return;
    }
    std::vector<GpuSpec> gpus = KnownGpus();
    std::stable_sort(gpus.begin(), gpus.end(), [](const GpuSpec& a, const GpuSpec& b) {
      return a.memory_bytes < b.memory_bytes;
    });
    auto from = std::find_if(gpus.begin(), gpus.end(), [this](const GpuSpec& g) {
      return g.name == context_.smallest_fitting_gpu;
    });
    std::vector<PlanFlags> changes;
    for (auto it = from; it != gpus.end(); ++it)
      changes.push_back(Change(&PlanFlags::gpu, it->name));
    SearchChanges({AlternativeKind::kLargerGpu}, changes);
  }

  bool AnyFitsOnGpuAsked() const {
    return std::any_of(result_.planned.begin(), result_.planned.end(), [](const Alternative& a) {
      return a.plan.fits && GroupOf(a.kinds) <= GroupOf(AlternativeKind::kShorterSequence);
    });
  }

  const AlternativeContext& context_;
  const AlternativeOptions& options_;
  const PlanAlternativeFn& plan_;
  AlternativeSearch result_;
};

}  // namespace

AlternativeSearch SearchAlternatives(const AlternativeContext& context,
                                     const AlternativeOptions& options,
                                     const PlanAlternativeFn& plan) {
  return AlternativeSearcher(context, options, plan).Run();
}

AlternativeSearch SearchOomAlternatives(const AlternativeContext& context, const OomRun& run,
                                        const PlanAlternativeFn& plan) {
  const AlternativeOptions options;
  return AlternativeSearcher(context, options, plan).RunOom(run);
}

void RankAlternatives(std::vector<Alternative>& alternatives) {
  std::stable_sort(alternatives.begin(), alternatives.end(),
                   [](const Alternative& a, const Alternative& b) {
                     if (a.plan.fits != b.plan.fits) return a.plan.fits;
                     const int ga = GroupOf(a.kinds);
                     const int gb = GroupOf(b.kinds);
                     if (ga != gb) return ga < gb;
                     if (a.plan.chosen.samples_per_second != b.plan.chosen.samples_per_second)
                       return a.plan.chosen.samples_per_second > b.plan.chosen.samples_per_second;
                     return a.plan.chosen.peak_bytes < b.plan.chosen.peak_bytes;
                   });
}

bool IsSequenceSymbol(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view word : {"seq", "len", "ctx", "context", "token"})
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

PlanFlags ReplacedFlags(const PlanFlags& asked, const PlanFlags& change) {
  PlanFlags replaced;
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (change.*spec.integer && asked.*spec.integer &&
            *(change.*spec.integer) != *(asked.*spec.integer))
          replaced.*spec.integer = asked.*spec.integer;
        break;
      case PlanFlagType::kText:
        if (change.*spec.text && asked.*spec.text && *(change.*spec.text) != *(asked.*spec.text))
          replaced.*spec.text = asked.*spec.text;
        break;
      case PlanFlagType::kDims:
        for (const auto& [name, value] : change.dims) {
          auto it = asked.dims.find(name);
          if (it != asked.dims.end() && it->second != value) replaced.dims[name] = it->second;
        }
        break;
      case PlanFlagType::kSwitch:
        break;
    }
  }
  return replaced;
}

}  // namespace memplan
