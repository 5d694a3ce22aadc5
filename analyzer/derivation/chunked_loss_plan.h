#pragma once
// `--loss-chunks N` applied to a loaded graph: torchtune's chunked output and loss
// (TransformerDecoder.chunked_output with CEWithChunkedOutputLoss, torchtune 0.6.1,
// modules/transformer.py and modules/loss/ce_chunked_output_loss.py):
//
//   logits = [self.output(chunk) for chunk in h.chunk(N, dim=1)]       # one projection per chunk
//   for logits_chunk, labels_chunk in zip(logits, labels.chunk(N, dim=1)):
//       total_loss += F.cross_entropy(logits_chunk.float(), labels_chunk, reduction="sum")
//
// The output projection runs once per chunk of tokens and each chunk's cross entropy is its own
// autograd graph, so the half logits are N tensors, and each chunk is upcast to fp32 on its own
// (the copy dies after its log_softmax). Backward runs the last chunk's loss first (autograd
// runs the ready node created last) and each chunk's nll_loss_backward and
// _log_softmax_backward_data (derivatives.yaml) free that chunk's saved log-probs before the
// next chunk's run; each chunk's logits gradient is its own tensor, read by that chunk's
// projection backward. The graph says all of it once rewritten:
//
//   h -> MatMul(h, W) -> logits                 becomes
//   h -> Split(axis 1, torch.chunk's sizes) -> h_k -> MatMul(h_k, W) -> logits.chunk<k>
//
// (with the head's bias Add per chunk, and a Transpose of a tied or nn.Linear weight read by
// every chunk), and the program's loss is one cross-entropy term per chunk (ProgramOptions::
// loss_outputs, the terms' backward in reverse order: step_emission_backward.cc), each in fp32
// (LossComputeDType with loss_chunks > 0). The heads recognised are lm_head_match.h's; the logits
// must be [batch, seq, vocab] with a constant seq and read by nothing else.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

struct ChunkedLossPlan {
  int64_t requested = 0;             // --loss-chunks (0: not asked)
  std::string logits;                // the output that was chunked
  std::string head;                  // lm_head_match.h's head kind
  std::vector<int64_t> rows;         // tokens per sample of each chunk (torch.chunk's sizes)
  std::vector<std::string> outputs;  // the chunks' logits, in order: the loss terms

  bool chunked() const { return !outputs.empty(); }
  // Points `program`'s loss at the chunks (one term per chunk, each the requested loss) when
  // chunked; leaves it as it is otherwise.
  void PlanTerms(ProgramOptions& program) const;
};

// torch.chunk(size, chunks): ceil(size / chunks) per chunk, the last smaller, so there may be
// fewer than `chunks` (8 chunks of 10 are 5 of 2). REQUIRES: size >= 1, chunks >= 1.
std::vector<int64_t> TorchChunkSizes(int64_t size, int64_t chunks);

// Rewrites `graph` when `chunks` > 0 (otherwise unchanged, an empty plan). The chunked output is
// `loss_outputs`' one name, or the graph's first output when it is empty; `loss` is the --loss
// request (auto resolves as the program would); seq is the logits' axis 1 under `dims` (the
// --dim bindings). `model` names the file in errors (bad input, one
// line each, naming --loss-chunks): several loss outputs, a loss other than cross entropy,
// logits that are not [batch, seq, vocab] with a known seq or are read by another node, no
// recognised LM head.
Expected<ChunkedLossPlan> ApplyChunkedLoss(Graph& graph, int64_t chunks, LossKind loss,
                                           const std::vector<std::string>& loss_outputs,
                                           const Bindings& dims, const std::string& model);

}  // namespace memplan
