#pragma once
// `memplan analyze` when nothing fits: the alternatives (analyzer/alternatives/
// alternative_search.h), each the asked flags with one change, resolved as the verb resolves its
// own flags and planned by PlanRequestOn, the session's one planning path.

#include <functional>

#include "analyzer/alternatives/alternative_search.h"
#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/planned_model.h"
#include "analyzer/pipeline/progress_sink.h"
#include "graph/expected.h"

namespace memplan {

// The verb's own resolution of plan arguments into a request (analyze: ResolvePlanFlags, then
// the --export regime and the --profile times).
using RequestResolver = std::function<Expected<PlanRequest>(const PlanArguments&)>;

// When `session`'s plan does not fit even at micro-batch 1, searches the alternatives of the
// flags `asked` (what `session` was resolved from) and points session.report.alternatives at
// them; otherwise does nothing. A change that keeps the model as loaded reuses the session's
// graph; one that changes fine-tuning (--lora) loads the model again, once per such change.
// Progress: one line per request planned.
void AddSessionAlternatives(AnalysisSession& session, const PlanArguments& asked,
                            const RequestResolver& resolve, const ProgressSink& progress);

// `memplan explain SNAPSHOT MODEL.onnx`: SearchOomAlternatives for `run` on `session` (planned at
// the run's micro-batch), each change resolved by `resolve` and planned as above, fits judged on
// the session's budget. Unlike AddSessionAlternatives, planned whether the session's plan fits or
// not, and --fused-loss is a change (its graph is prepared with the fused loss).
AlternativesReport SessionOomAlternatives(const AnalysisSession& session,
                                          const PlanArguments& asked, const OomRun& run,
                                          const RequestResolver& resolve,
                                          const ProgressSink& progress);

}  // namespace memplan
