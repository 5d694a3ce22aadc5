// `memplan explain SNAPSHOT [MODEL.onnx plan flags] [--json] [--html FILE]`: at a PyTorch memory
// snapshot's OOM (or its reserved peak), what held the memory: live bytes by category
// (analyzer/simulation/snapshot_breakdown.h), the bytes PyTorch kept cached but free, and the
// largest live blocks with their frames. With the model and the run's plan flags, the blocks are
// attributed to memplan's program buffers (analyzer/simulation/snapshot_attribution.h) and each
// change of SearchOomAlternatives is planned at the device's capacity (what would have fit).
// SNAPSHOT is tools/snapshot_to_json.py's output. Reports: analyzer/report/snapshot_report.h.
#include <memory>
#include <optional>
#include <string>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/session_alternatives.h"
#include "analyzer/report/snapshot_report.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/memory_snapshot.h"
#include "analyzer/simulation/simulator.h"
#include "analyzer/simulation/snapshot_attribution.h"
#include "analyzer/simulation/snapshot_breakdown.h"
#include "analyzer/simulation/snapshot_replay.h"
#include "analyzer/text/markup.h"
#include "analyzer/text/memory_size.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

struct ExplainFlags {
  std::string snapshot;
  PlanArguments plan;  // the model (optional) and the run's plan flags
  std::string html;
};

// The device the run had. At an OOM that recorded device_free: PyTorch's reserved bytes there
// plus what CUDA still reported free, the most PyTorch could have reserved (the CUDA context and
// other processes are outside both). Otherwise --gpu must name it.
struct Capacity {
  int64_t bytes = 0;
  std::string source;
};
Expected<std::optional<Capacity>> SnapshotCapacity(const MemorySnapshot& snapshot,
                                                   const SnapshotReplayResult& replay) {
  if (replay.ooms.empty()) return std::optional<Capacity>();
  const SnapshotEvent& oom = snapshot.events[static_cast<size_t>(replay.ooms.front().event)];
  if (oom.device_free < 0) return std::optional<Capacity>();
  return std::optional<Capacity>(Capacity{replay.ooms.front().snapshot_reserved + oom.device_free,
                                          "the OOM's reserved " +
                                              FormatBytes(replay.ooms.front().snapshot_reserved) +
                                              " + device_free " + FormatBytes(oom.device_free)});
}

// The run's plan flags resolved as `analyze` resolves them, on the snapshot's device when it
// names its capacity: that many bytes with no CUDA context and no reserve (PyTorch's reserved
// bytes and device_free are both after the context), the cuBLAS workspaces kept (memplan counts
// them outside the budget; PyTorch's trace has them as allocations).
Expected<PlanRequest> ResolveRunRequest(const PlanArguments& plan,
                                        const std::optional<Capacity>& capacity) {
  MEMPLAN_TRY(PlanRequest request, ResolvePlanFlags(plan, /*require_gpu=*/false));
  if (capacity && plan.Text("gpu").empty()) {
    MEMPLAN_TRY(request.planner.gpu, ResolveGpu(std::to_string(capacity->bytes)));
    GpuSpec& gpu = request.planner.gpu;
    gpu.context_bytes -= gpu.cuda_context_bytes;
    gpu.cuda_context_bytes = 0;
    if (plan.Text("reserve").empty()) request.planner.reserve_bytes = 0;
    if (gpu.memory_bytes - gpu.context_bytes - request.planner.reserve_bytes <= 0)
      return MakeError("explain: the snapshot's device (" + FormatBytes(capacity->bytes) +
                       ") leaves no memory after the cuBLAS workspaces and --reserve");
  }
  return request;
}

// The model half: the run's plan, the attribution, the changes.
Expected<SnapshotModelExplanation> ExplainWithModel(const ExplainFlags& flags,
                                                    const MemorySnapshot& snapshot,
                                                    const SnapshotReplayResult& replay,
                                                    const SnapshotBreakdown& breakdown,
                                                    std::unique_ptr<AnalysisSession>& session) {
  MEMPLAN_TRY(std::optional<Capacity> capacity, SnapshotCapacity(snapshot, replay));
  if (!capacity && flags.plan.Text("gpu").empty())
    return MakeError("explain: " + flags.snapshot +
                     (replay.ooms.empty() ? " has no OOM" : "'s OOM recorded no device_free") +
                     ", so the device's capacity is unknown: --gpu names it");
  if (flags.plan.Text("micro_batch").empty() && flags.plan.analysis.batch.empty())
    return MakeError("explain: --micro-batch is required with a model (the run's micro-batch)");
  MEMPLAN_TRY(PlanRequest request, ResolveRunRequest(flags.plan, capacity));
  const Progress progress(request.analysis.format);
  MEMPLAN_TRY(session, RunAnalysisSession(std::move(request), progress));
  const TrainingPlan& plan = session->plan;
  SnapshotModelExplanation m;
  m.model_path = flags.plan.analysis.model;
  m.plan = &plan;
  if (capacity && flags.plan.Text("gpu").empty()) {
    m.capacity_bytes = capacity->bytes;
    m.capacity_source = capacity->source;
  } else {
    m.capacity_bytes = plan.budget_bytes;
    m.capacity_source = "--gpu " + flags.plan.Text("gpu") + ", its budget";
  }
  // memplan's allocation script for the plan: its walk's Allocs in order.
  ExactAllocator exact;
  SimulationOptions options;
  options.record_timeline = false;
  options.record_trace = true;
  MEMPLAN_TRY(SimulationResult walked, Simulate(plan.program, plan.bindings, exact, options));
  MEMPLAN_TRY(m.attribution,
              AttributeSnapshot(snapshot, breakdown.event, plan.program, walked.trace));
  // No allocation of the run has a size and phase memplan's plan allocates: another model, or
  // the run's dims are not the flags'.
  if (m.attribution.snapshot_allocations > 0 && m.attribution.matched_allocations == 0)
    return MakeError("explain: " + flags.plan.analysis.model + " does not match " + flags.snapshot +
                     ": none of its " + std::to_string(m.attribution.snapshot_allocations) +
                     " allocations has the size of a buffer memplan plans for it (another model, "
                     "or other --micro-batch / --dim values?)");
  OomRun run;
  run.micro_batch = plan.chosen.micro_batch;
  run.accumulation_steps = plan.chosen.accumulation_steps;
  if (breakdown.at_oom) run.oom_request_bytes = breakdown.oom_request;
  m.alternatives = SessionOomAlternatives(
      *session, flags.plan, run,
      [&capacity](const PlanArguments& changed) { return ResolveRunRequest(changed, capacity); },
      progress);
  return m;
}

int RunExplain(const ExplainFlags& flags) {
  if (flags.snapshot.empty())
    return ReportError("explain: a snapshot is required (tools/snapshot_to_json.py's output)");
  if (!flags.html.empty())
    if (Status ok = CheckOutputPath("--html", flags.html); !ok.ok())
      return ReportError(ok.error().message);
  Expected<MemorySnapshot> snapshot = ReadMemorySnapshot(flags.snapshot);
  if (!snapshot.ok()) return ReportError(snapshot.error().message);
  // The replay finds the focus (the first OOM, else PyTorch's reserved peak) and checks the
  // trace's consistency.
  Expected<SnapshotReplayResult> replay = ReplaySnapshot(*snapshot);
  if (!replay.ok()) return ReportError(flags.snapshot + ": " + replay.error().message);
  int64_t event = replay->event_of_snapshot_peak;
  int64_t reserved = replay->snapshot_peak_reserved;
  if (!replay->ooms.empty()) {
    event = replay->ooms.front().event;
    reserved = replay->ooms.front().snapshot_reserved;
  }
  Expected<SnapshotBreakdown> breakdown = BreakdownAt(*snapshot, event, reserved);
  if (!breakdown.ok()) return ReportError(flags.snapshot + ": " + breakdown.error().message);
  SnapshotExplanation explanation;
  explanation.path = flags.snapshot;
  explanation.snapshot = &*snapshot;
  explanation.breakdown = std::move(*breakdown);
  std::unique_ptr<AnalysisSession> session;  // the plan the report points into
  if (!flags.plan.analysis.model.empty()) {
    Expected<SnapshotModelExplanation> model =
        ExplainWithModel(flags, *snapshot, *replay, explanation.breakdown, session);
    if (!model.ok()) return ReportError(model.error().message);
    explanation.model = std::move(*model);
  }
  if (!flags.html.empty()) {
    FillSnapshotTimeline(explanation, replay->snapshot_start_reserved, replay->preexisting_bytes);
    if (Status written = WriteTextFile(flags.html, SnapshotExplanationHtml(explanation));
        !written.ok())
      return ReportError(written.error().message);
  }
  const bool json = flags.plan.analysis.json || flags.plan.analysis.format == "json";
  const std::string out =
      json ? SnapshotExplanationJson(explanation) : SnapshotExplanationText(explanation);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddExplainCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<ExplainFlags>(
      app, "explain",
      "what held GPU memory at a PyTorch memory snapshot's OOM (or peak), by category, with the "
      "largest blocks; with the model and the run's plan flags, the blocks attributed to "
      "memplan's program and what would have fit");
  command->add_option("snapshot", flags->snapshot,
                      "the snapshot as tools/snapshot_to_json.py writes it");
  // The flags say what the run did, and a script does what it says: fp32 unless it autocasts,
  // no recompute unless it checkpoints (the planner's own defaults search both).
  flags->plan.Text("precision") = "fp32";
  flags->plan.Text("recompute") = "none";
  AddPlanFlags(*command, flags->plan);
  command->get_option("model")->required(false)->description(
      "the model the run trained (optional): an ONNX file");
  command->add_option("--html", flags->html, "also write the timeline and the report as HTML")
      ->type_name("FILE.html");
  return VerbRunning(command, flags, RunExplain);
}

}  // namespace memplan::cli
