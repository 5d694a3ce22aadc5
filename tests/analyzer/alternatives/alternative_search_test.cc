// The alternatives search when nothing fits (analyzer/alternatives/alternative_search.h): which
// changes it tries, in which order, how far its searches go, what it skips and how it ranks.
// The planner is a fake whose bytes follow from the flags by the rules of FakeModel, so every
// outcome below is derived by hand from those rules.

#include <catch2/catch.hpp>

#include <algorithm>

#include <string>
#include <vector>

#include "analyzer/alternatives/alternative_search.h"
#include "analyzer/alternatives/alternatives_report.h"
#include "analyzer/baseline/pinned_plan.h"
#include "analyzer/cost/gpu_specs.h"

namespace memplan {
namespace {

// A made-up model, planned by rules instead of the simulator:
//   trained elements   P, or P / 100 with --lora (the rank does not matter here)
//   weights            4 B per element; with --lora the frozen base 2 B (fp16/bf16), 0.5 B (nf4)
//   gradients          4 B per trained element
//   optimizer state    adam 8 B, adamw8bit 2 B, lion 4 B, adafactor 0 B per trained element
//   activations        `activations` B at seq 4096, proportional to seq; a quarter unless
//                      --recompute none (the joint search recomputes what the budget needs)
//   --gpus N           weights, gradients and state divided by N (zero3); activations are not
//   --offload          optimizer: no optimizer state on the GPU; optimizer+params: no weights
//                      either (both on the host, which is not budgeted)
//   fragmentation      `fragmentation` B more under the caching allocator's defaults, none
//                      with --alloc-conf (expandable_segments:True)
//   budget             the GPU's memory less its context (ResolveGpu: 512 MiB)
//   samples/s          10 x N, x 0.8 with an nf4 base (dequantisation), x 4096 / seq,
//                      x 0.5 with --offload optimizer, x 0.25 with optimizer+params (PCIe)
struct FakeModel {
  int64_t parameters = 0;
  int64_t activations = 0;
  int64_t fragmentation = 0;
  std::vector<std::string> asked;  // every request planned, as arguments

  AlternativePlan Plan(const PlanFlags& f) {
    asked.push_back(PlanFlagsAsArguments(f));
    const bool lora = f.lora.has_value();
    const int64_t trained = lora ? parameters / 100 : parameters;
    const std::string base = f.base_dtype.value_or("fp32");
    const std::string offload = f.offload.value_or("none");
    const int64_t weights = offload == "optimizer+params" ? 0
                            : !lora                       ? 4 * parameters
                            : base == "nf4"               ? parameters / 2
                                                          : 2 * parameters;
    const std::string optimizer = f.optimizer.value_or("adam");
    const int64_t state_bytes = offload != "none"          ? 0
                                : optimizer == "adamw8bit" ? 2
                                : optimizer == "lion"      ? 4
                                : optimizer == "adafactor" ? 0
                                                           : 8;
    const int64_t n = f.gpus.value_or(1);
    const int64_t seq = f.dims.at("seq");
    int64_t act = activations / 4096 * seq;
    if (f.recompute.value_or("auto") != "none") act /= 4;
    const GpuSpec gpu = ResolveGpu(f.gpu.value()).value();
    AlternativePlan plan;
    plan.budget_bytes = gpu.memory_bytes - gpu.context_bytes;
    plan.persistent_state_bytes = (weights + state_bytes * trained) / n;
    plan.chosen.micro_batch = 1;
    plan.chosen.peak_bytes = (weights + 4 * trained + state_bytes * trained) / n + act +
                             (f.alloc_conf ? 0 : fragmentation);
    const double pcie = offload == "optimizer" ? 0.5 : offload == "optimizer+params" ? 0.25 : 1.0;
    plan.chosen.samples_per_second = 10.0 * static_cast<double>(n) * (base == "nf4" ? 0.8 : 1.0) *
                                     pcie * 4096 / static_cast<double>(seq);
    plan.fits = plan.chosen.peak_bytes <= plan.budget_bytes;
    plan.gpu = gpu.name;
    plan.gpus = n;
    return plan;
  }
};

// 24G: 24 x 2^30 - 512 x 2^20 = 25,769,803,776 - 536,870,912 = 25,232,932,864 B.
constexpr int64_t kBudget24G = 25232932864;

AlternativeContext ContextFor(FakeModel& model, PlanFlags asked) {
  AlternativeContext c;
  c.asked = std::move(asked);
  AlternativePlan as_asked = model.Plan(c.asked);
  model.asked.clear();
  c.budget_bytes = as_asked.budget_bytes;
  c.persistent_state_bytes = as_asked.persistent_state_bytes;
  c.batch_symbol = "batch";
  return c;
}

AlternativeSearch Search(FakeModel& model, const AlternativeContext& context) {
  return SearchAlternatives(context, AlternativeOptions{},
                            [&model](const PlanFlags& flags, const PlanFlags&) {
                              return Expected<AlternativePlan>(model.Plan(flags));
                            });
}

PlanFlags Asked(std::optional<std::string> recompute) {
  PlanFlags asked;
  asked.gpu = "24G";
  asked.dims["seq"] = 4096;
  asked.recompute = std::move(recompute);
  return asked;
}

std::vector<std::string> ChangesOf(const AlternativeSearch& search) {
  std::vector<std::string> changes;
  for (const Alternative& a : search.planned)
    changes.push_back(PlanFlagsAsArguments(a.change) + (a.plan.fits ? " fits" : " no"));
  return changes;
}

TEST_CASE("alternatives try expandable segments only where the live bytes fit", "[alternatives]") {
  // 1e9 parameters: 4e9 weights + 4e9 gradients + 8e9 adam state = 16e9; activations 16e9 / 4
  // (recompute auto) = 4e9; live 20e9 <= 25.23e9, but 6e9 of fragmentation makes 26e9.
  FakeModel model{
      .parameters = 1'000'000'000, .activations = 16'000'000'000, .fragmentation = 6'000'000'000};
  AlternativeContext context = ContextFor(model, Asked(std::nullopt));
  context.live_peak_bytes = 20'000'000'000;
  const AlternativeSearch search = Search(model, context);
  const auto tried = std::count(model.asked.begin(), model.asked.end(),
                                "--dim seq=4096 --gpu 24G --alloc-conf expandable_segments:True");
  CHECK(tried == 1);
  bool fits = false;  // 20e9 without the fragmentation
  for (const Alternative& a : search.planned)
    fits |= a.kinds == std::vector<AlternativeKind>{AlternativeKind::kAllocator} && a.plan.fits &&
            a.plan.chosen.peak_bytes == 20'000'000'000;
  CHECK(fits);

  // Live bytes over the budget: no allocator setting brings them under it, so it is not tried.
  FakeModel over = model;
  over.asked.clear();
  context.live_peak_bytes = kBudget24G + 1;
  (void)Search(over, context);
  CHECK(std::count(over.asked.begin(), over.asked.end(),
                   "--dim seq=4096 --gpu 24G --alloc-conf expandable_segments:True") == 0);
  // Nor where the user chose the allocator.
  FakeModel chosen = model;
  chosen.asked.clear();
  context.live_peak_bytes = 20'000'000'000;
  context.asked.allocator = "expandable";
  (void)Search(chosen, context);
  for (const std::string& request : chosen.asked)
    CHECK(request.find("--alloc-conf") == std::string::npos);
}

TEST_CASE("alternatives of a full fine-tune: LoRA, QLoRA, 4 GPUs, a larger GPU", "[alternatives]") {
  // 3e9 parameters, 8e9 B of activations at seq 4096 (2e9 recomputed, --recompute auto asked).
  // As asked (adam): 12e9 weights + 12e9 gradients + 24e9 state + 2e9 = 50e9 B > 25.23e9.
  // Weights and state alone are 36e9 B: a shorter sequence cannot help (not planned).
  FakeModel model{.parameters = 3'000'000'000, .activations = 8'000'000'000};
  AlternativeContext context = ContextFor(model, Asked(std::nullopt));
  REQUIRE(context.budget_bytes == kBudget24G);
  // The smallest GPU whose budget holds 50e9 B: A6000, 49140 MiB - 512 MiB = 50,990,153,728 B.
  context.smallest_fitting_gpu = "A6000";
  const AlternativeSearch search = Search(model, context);

  // Tried in the documented order; every request keeps the asked flags.
  CHECK(model.asked == std::vector<std::string>{
                           "--dim seq=4096 --gpu 24G --optimizer adamw8bit",
                           "--dim seq=4096 --gpu 24G --optimizer adafactor",
                           "--dim seq=4096 --gpu 24G --optimizer lion",
                           "--dim seq=4096 --gpu 24G --lora 16 --base-dtype fp16",
                           "--dim seq=4096 --gpu 24G --lora 16 --base-dtype nf4",
                           "--dim seq=4096 --gpu 24G --offload optimizer",
                           "--dim seq=4096 --gpu 24G --offload optimizer+params",
                           "--dim seq=4096 --gpu 24G --gpus 2 --parallel zero3",
                           "--dim seq=4096 --gpu 24G --gpus 4 --parallel zero3",
                           "--dim seq=4096 --gpu A6000",
                       });
  CHECK(search.plans == 10);
  // LoRA (fp16 base: the GPU has no bf16): 6e9 + 3e7 x (4 + 8) + 2e9 = 8.36e9 B, 10 samples/s.
  // QLoRA: 1.5e9 + 0.36e9 + 2e9 = 3.86e9 B, 8 samples/s. Offload optimizer: 12e9 + 12e9 + 2e9 =
  // 26e9 B, no; optimizer+params: 12e9 + 2e9 = 14e9 B, 2.5 samples/s. 2 GPUs: 48e9 / 2 + 2e9 = 26e9
  // B, no; 4 GPUs: 12e9 + 2e9 = 14e9 B, 40 samples/s (ranked after the one-GPU changes). A6000:
  // fits. Not fitting, by peak: adafactor 12e9 + 12e9 + 2e9 = 26e9, adamw8bit 32e9, lion 38e9.
  CHECK(ChangesOf(search) == std::vector<std::string>{
                                 "--lora 16 --base-dtype fp16 fits",
                                 "--lora 16 --base-dtype nf4 fits",
                                 "--offload optimizer+params fits",
                                 "--gpus 4 --parallel zero3 fits",
                                 "--gpu A6000 fits",
                                 "--optimizer adafactor no",
                                 "--optimizer adamw8bit no",
                                 "--optimizer lion no",
                             });
  CHECK(search.planned[1].plan.chosen.peak_bytes == 3'860'000'000);
  CHECK(search.planned[2].kinds == std::vector<AlternativeKind>{AlternativeKind::kOffload});
  CHECK(search.planned[2].plan.chosen.peak_bytes == 14'000'000'000);
  CHECK(search.planned[3].plan.gpus == 4);
  CHECK(search.planned[4].plan.budget_bytes == 50'990'153'728);
  REQUIRE(search.skipped.size() == 1);
  CHECK(search.skipped[0].kinds == std::vector<AlternativeKind>{AlternativeKind::kShorterSequence});
  CHECK(PlanFlagsAsArguments(search.skipped[0].change) == "--dim seq=2048");
  CHECK(search.skipped[0].reason ==
        "the parameters and optimizer state alone (33.5 GiB) exceed the budget (23.5 GiB); this "
        "changes activations only");
}

TEST_CASE("alternatives when activations dominate: recompute, a shorter sequence",
          "[alternatives]") {
  // 2e8 parameters (3.2e9 B of model state), 40e9 B of activations at seq 4096, --recompute none.
  FakeModel model{.parameters = 200'000'000, .activations = 40'000'000'000};
  AlternativeContext context = ContextFor(model, Asked("none"));
  context.smallest_fitting_gpu = "A6000";  // holds 43.2e9 B
  const AlternativeSearch search = Search(model, context);
  // recompute: 3.2e9 + 10e9 fits. seq 2048: 3.2e9 + 20e9 = 23.2e9 fits at the first halving
  // (20 samples/s, but ranked after the changes that keep the sequence).
  // 64 GPUs: 3.2e9 / 64 + 40e9 still does not fit: the search ends there, the last one kept.
  // No pair: a single change fits this GPU. Not fitting, at 10 samples/s by peak: LoRA
  // 0.4e9 + 2e6 x 12 + 40e9 = 40.424e9, adafactor 41.6e9, adamw8bit 42.0e9, lion 42.4e9; then
  // QLoRA (8 samples/s); offload: optimizer 0.8e9 + 0.8e9 + 40e9 = 41.6e9 no, so optimizer+params
  // 40.8e9, no, kept (2.5 samples/s); then 64 GPUs (a later group).
  CHECK(ChangesOf(search) == std::vector<std::string>{
                                 "--recompute auto fits",
                                 "--dim seq=2048 fits",
                                 "--gpu A6000 fits",
                                 "--lora 16 --base-dtype fp16 no",
                                 "--optimizer adafactor no",
                                 "--optimizer adamw8bit no",
                                 "--optimizer lion no",
                                 "--lora 16 --base-dtype nf4 no",
                                 "--offload optimizer+params no",
                                 "--gpus 64 --parallel zero3 no",
                             });
  // 1 recompute + 3 optimizers + 2 LoRA + 1 sequence + 2 offloads + 6 GPU counts (2..64) + 1 GPU.
  CHECK(search.plans == 16);
  CHECK(search.skipped.empty());
  AlternativesReport report{context.asked, search};
  CHECK(AlternativesJson(report)[0]["replaces"] == "--recompute none");
  CHECK(AlternativesJson(report)[1]["replaces"] == "--dim seq=4096");
  CHECK(AlternativesJson(report)[1]["arguments"] == "--dim seq=2048 --gpu 24G --recompute none");
}

TEST_CASE("alternatives pair QLoRA with recompute when no single change fits", "[alternatives]") {
  // 3e9 parameters, 24e9 B of activations at seq 4096, --recompute none. Single changes:
  // recompute and a shorter sequence are not planned (36e9 B of weights and state);
  // LoRA 6.36e9 + 24e9 and QLoRA 1.86e9 + 24e9 = 25.86e9 B do not fit, nor do the optimizers.
  FakeModel model{.parameters = 3'000'000'000, .activations = 24'000'000'000};
  AlternativeContext context = ContextFor(model, Asked("none"));
  const AlternativeSearch search = Search(model, context);
  // Pairs: adamw8bit + recompute 30e9 + 6e9 no; LoRA + recompute 6.36e9 + 6e9 fits; QLoRA +
  // recompute 1.86e9 + 6e9 fits; QLoRA + seq 2048: 1.86e9 + 12e9 fits (QLoRA's weights and
  // state, 1.5e9 + 0.24e9, leave room). 32 GPUs: 48e9 / 32 + 24e9 = 25.5e9 B, no; 64 GPUs:
  // 0.75e9 + 24e9 = 24.75e9 B fits. No GPU in the table was named: not planned.
  // Ranked: the recompute pairs (10 and 8 samples/s), QLoRA + seq (a shorter sequence), 64 GPUs.
  std::vector<std::string> fitting;
  for (const Alternative& a : search.planned)
    if (a.plan.fits) fitting.push_back(PlanFlagsAsArguments(a.change));
  CHECK(fitting == std::vector<std::string>{
                       "--recompute auto --lora 16 --base-dtype fp16",
                       "--recompute auto --lora 16 --base-dtype nf4",
                       "--dim seq=2048 --lora 16 --base-dtype nf4",
                       "--gpus 64 --parallel zero3",
                   });
  const Alternative& qlora_recompute = search.planned[1];
  CHECK(qlora_recompute.kinds ==
        std::vector<AlternativeKind>{AlternativeKind::kQlora, AlternativeKind::kRecompute});
  CHECK(qlora_recompute.plan.chosen.peak_bytes == 7'860'000'000);
  // Skipped: recompute and the sequence (weights and state), the larger GPU (none named).
  REQUIRE(search.skipped.size() == 3);
  CHECK(search.skipped[0].kinds == std::vector<AlternativeKind>{AlternativeKind::kRecompute});
  CHECK(search.skipped[2].reason == "no GPU in memplan's table has enough memory");
}

TEST_CASE("alternatives offload: the first mode that fits, one GPU only", "[alternatives]") {
  // 2e9 parameters, 8e9 B of activations (2e9 recomputed). As asked: 8e9 + 8e9 + 16e9 + 2e9 =
  // 34e9 B, no. --offload optimizer: 8e9 + 8e9 + 2e9 = 18e9 B fits: optimizer+params is not
  // planned.
  FakeModel model{.parameters = 2'000'000'000, .activations = 8'000'000'000};
  AlternativeContext context = ContextFor(model, Asked(std::nullopt));
  const AlternativeSearch search = Search(model, context);
  std::vector<std::string> offloads;
  for (const std::string& asked : model.asked)
    if (asked.find("--offload") != std::string::npos) offloads.push_back(asked);
  CHECK(offloads == std::vector<std::string>{"--dim seq=4096 --gpu 24G --offload optimizer"});
  bool fits = false;
  for (const Alternative& a : search.planned)
    fits |= a.kinds == std::vector<AlternativeKind>{AlternativeKind::kOffload} && a.plan.fits &&
            a.plan.chosen.peak_bytes == 18'000'000'000;
  CHECK(fits);

  // Not tried on 2 GPUs (memplan plans offload for one), nor when an offload was asked.
  model.asked.clear();
  context.gpus = 2;
  Search(model, context);
  for (const std::string& asked : model.asked) CHECK(asked.find("--offload") == std::string::npos);
  PlanFlags asked = Asked(std::nullopt);
  asked.offload = "activations";
  model.asked.clear();
  context = ContextFor(model, asked);
  Search(model, context);
  for (const std::string& a : model.asked)
    CHECK(a.find("--offload optimizer") == std::string::npos);
}

TEST_CASE("alternatives try zero3 on the GPUs asked before more GPUs", "[alternatives]") {
  // The fake divides every state by N whatever the strategy, so zero2 and zero3 on 8 GPUs plan
  // the same bytes: what is checked is which sharding requests are made and in which order.
  FakeModel model{.parameters = 8'000'000'000, .activations = 8'000'000'000};
  PlanFlags asked = Asked(std::nullopt);
  asked.gpus = 8;
  asked.parallel = "zero2";
  AlternativeContext context = ContextFor(model, asked);
  context.gpus = 8;
  Search(model, context);
  std::vector<std::string> sharded;
  for (const std::string& a : model.asked)
    if (a.find("--parallel zero3") != std::string::npos) sharded.push_back(a);
  REQUIRE_FALSE(sharded.empty());
  CHECK(sharded.front() == "--dim seq=4096 --gpu 24G --gpus 8 --parallel zero3");

  // Asked zero3 already: the plan as asked is not planned again; sharding starts at 16.
  asked.parallel = "zero3";
  context = ContextFor(model, asked);
  context.gpus = 8;
  Search(model, context);
  for (const std::string& a : model.asked)
    CHECK(a != "--dim seq=4096 --gpu 24G --gpus 8 --parallel zero3");
  CHECK(std::find(model.asked.begin(), model.asked.end(),
                  "--dim seq=4096 --gpu 24G --gpus 16 --parallel zero3") != model.asked.end());
}

TEST_CASE("alternatives the planner refuses are listed with its reason", "[alternatives]") {
  FakeModel model{.parameters = 3'000'000'000, .activations = 8'000'000'000};
  AlternativeContext context = ContextFor(model, Asked(std::nullopt));
  context.smallest_fitting_gpu = "A6000";
  // LoRA has no target in this model; 4 GPUs cannot split the global batch.
  const AlternativeSearch search = SearchAlternatives(
      context, AlternativeOptions{},
      [&model](const PlanFlags& flags, const PlanFlags&) -> Expected<AlternativePlan> {
        if (flags.lora) return MakeError("--lora-targets: no weight matches");
        if (flags.gpus == 4) return MakeError("global batch 2 is not reachable on 4 GPUs");
        return model.Plan(flags);
      });
  REQUIRE(search.skipped.size() == 3);
  CHECK(PlanFlagsAsArguments(search.skipped[0].change) == "--lora 16 --base-dtype fp16");
  CHECK(search.skipped[0].reason == "--lora-targets: no weight matches");
  CHECK(PlanFlagsAsArguments(search.skipped[1].change) == "--lora 16 --base-dtype nf4");
  CHECK(search.skipped[2].kinds == std::vector<AlternativeKind>{AlternativeKind::kShorterSequence});
  // The GPU search went as far as 2 GPUs (26e9 B, does not fit) and keeps that plan.
  bool two_gpus = false;
  for (const Alternative& a : search.planned) two_gpus |= a.change.gpus == 2 && !a.plan.fits;
  CHECK(two_gpus);
}

TEST_CASE("alternatives with LoRA asked: an nf4 base only, none for an nf4 base",
          "[alternatives]") {
  FakeModel model{.parameters = 3'000'000'000, .activations = 8'000'000'000};
  PlanFlags asked = Asked(std::nullopt);
  asked.lora = 8;
  asked.base_dtype = "bf16";
  asked.optimizer = "sgd";  // no optimizer change for sgd
  AlternativeContext context = ContextFor(model, asked);
  context.smallest_fitting_gpu = "H200";
  Search(model, context);
  CHECK(model.asked.front() ==
        "--dim seq=4096 --gpu 24G --optimizer sgd --lora 8 --base-dtype nf4");
  asked.base_dtype = "nf4";
  model.asked.clear();
  context = ContextFor(model, asked);
  context.smallest_fitting_gpu = "H200";
  Search(model, context);
  // No LoRA or QLoRA change is left: the first request is the shorter sequence (the nf4 base
  // and the state of 3e7 adapters, 1.5e9 + 0.24e9 B, leave room for activations).
  CHECK(model.asked.front() ==
        "--dim seq=2048 --gpu 24G --optimizer sgd --lora 8 --base-dtype nf4");
}

TEST_CASE("alternatives shard from the GPU count the model state needs", "[alternatives]") {
  // 1e11 parameters: weights 4e11 + adam state 8e11 = 1.2e12 B on one GPU. Over N GPUs at least
  // 1.2e12 / N must fit 25,232,932,864 B: N >= 47.6, so the search starts at 64.
  FakeModel model{.parameters = 100'000'000'000, .activations = 8'000'000'000};
  AlternativeContext context = ContextFor(model, Asked(std::nullopt));
  context.smallest_fitting_gpu = "H200";
  Search(model, context);
  std::vector<std::string> sharded;
  for (const std::string& asked : model.asked)
    if (asked.find("--gpus") != std::string::npos) sharded.push_back(asked);
  CHECK(sharded == std::vector<std::string>{"--dim seq=4096 --gpu 24G --gpus 64 --parallel zero3"});
  // At most 32 GPUs: nothing to plan, and the reason says so (1.2e12 B = 1.09 TiB).
  AlternativeOptions at_most_32;
  at_most_32.max_gpus = 32;
  const AlternativeSearch search =
      SearchAlternatives(context, at_most_32, [&model](const PlanFlags& flags, const PlanFlags&) {
        return Expected<AlternativePlan>(model.Plan(flags));
      });
  bool said = false;
  for (const SkippedAlternative& k : search.skipped)
    said |= k.kinds == std::vector<AlternativeKind>{AlternativeKind::kSharding} &&
            k.reason ==
                "the parameters and optimizer state (1.1 TiB) do not fit the budget even "
                "sharded over 32 GPUs";
  CHECK(said);
}

TEST_CASE("alternatives rank: fitting first, then group, then samples/s", "[alternatives]") {
  auto make = [](AlternativeKind kind, bool fits, double samples, int64_t peak) {
    Alternative a;
    a.kinds = {kind};
    a.plan.fits = fits;
    a.plan.chosen.samples_per_second = samples;
    a.plan.chosen.peak_bytes = peak;
    return a;
  };
  std::vector<Alternative> list = {
      make(AlternativeKind::kLargerGpu, true, 100, 1),
      make(AlternativeKind::kSharding, true, 50, 1),
      make(AlternativeKind::kOptimizer, false, 90, 1),
      make(AlternativeKind::kShorterSequence, true, 80, 1),
      make(AlternativeKind::kQlora, true, 5, 2),
      make(AlternativeKind::kLora, true, 5, 1),
      make(AlternativeKind::kRecompute, true, 7, 9),
  };
  RankAlternatives(list);
  std::vector<AlternativeKind> order;
  for (const Alternative& a : list) order.push_back(a.kinds[0]);
  CHECK(order == std::vector<AlternativeKind>{
                     AlternativeKind::kRecompute, AlternativeKind::kLora, AlternativeKind::kQlora,
                     AlternativeKind::kShorterSequence, AlternativeKind::kSharding,
                     AlternativeKind::kLargerGpu, AlternativeKind::kOptimizer});
}

TEST_CASE("sequence symbols and replaced flags", "[alternatives]") {
  for (const char* name : {"seq", "seq_len", "sequence_length", "n_ctx", "num_tokens", "SeqLen",
                           "context_length", "max_len"})
    CHECK(IsSequenceSymbol(name));
  for (const char* name : {"batch", "height", "width", "channels", "vocab"})
    CHECK_FALSE(IsSequenceSymbol(name));
  PlanFlags asked;
  asked.recompute = "none";
  asked.dims["seq"] = 4096;
  asked.gpu = "24G";
  PlanFlags change;
  change.recompute = "auto";
  change.gpu = "24G";  // the same value replaces nothing
  change.dims["seq"] = 1024;
  change.lora = 16;  // not asked: added
  CHECK(PlanFlagsAsArguments(ReplacedFlags(asked, change)) == "--dim seq=4096 --recompute none");
}

}  // namespace
}  // namespace memplan
