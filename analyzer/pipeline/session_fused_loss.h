#pragma once
// `memplan analyze` suggests --fused-loss when the loss is at the peak: it plans the session's
// request again with the loss fused and adds the advice analyzer/report/fused_loss_advice.h words
// from both plans (issue 43).

#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/progress_sink.h"

namespace memplan {

// When `session` did not fuse the loss, plans cross entropy and its peak is at the loss
// (PeakIsAtLoss): fuses the head of a copy of the session's graph (a --tp session loads the model
// again: its graph is one rank's slice), plans the same request with --fused-loss and appends
// the "fused-loss" advice where that plan does better. A model whose head cannot be fused (no
// recognised LM head) gets no advice; nothing here fails the analysis.
void AddFusedLossAdvice(AnalysisSession& session, const ProgressSink& progress);

}  // namespace memplan
