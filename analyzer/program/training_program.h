#pragma once
// The training program: one optimizer step of k micro-batches made concrete as an ordered list of
// steps over buffers whose byte sizes are symbolic (Dim) in the graph's symbols. The simulator
// (analyzer/simulation/simulator.h) replays it against an allocator model; the runtime executor
// interprets the same steps with real kernels. Derivation lives in
// analyzer/derivation/program_derivation.h.
//
// Layout and execution order. The steps vector holds three phases back to back:
//
//     steps:  [ setup ........ | micro_batch body ............... | optimizer ........ ]
//     run:      setup once,  then per optimizer step: body x k, then optimizer phase
//
// The micro-batch body is stored once and executed `accumulation_steps` (k) times; it is
// identical for every micro-batch because the first-vs-later differences are expressed by
// *guarded* memory events (see MemoryEvent): a parameter gradient is allocated only when it is not
// live yet (lazy, like PyTorch's AccumulateGrad stealing the first gradient), optimizer states are
// allocated only at the first optimizer step. Storing the body once keeps the program size
// independent of k, and lets the simulator evaluate any k (SimulationOptions) without
// re-deriving; the loss's 1/k factor is a scalar and changes no buffer.
//
// Time. `LogicalTime` is an index into `steps`. Each step has a Begin (outputs, workspace and cast
// buffers are allocated) and an End (buffers whose last use this was are freed), as in XLA's
// BeginInstruction/EndInstruction, so a step's inputs and outputs overlap in memory. A buffer
// allocated at Begin of step a and freed at End of step b is live over [a, b], inclusive:
//
//     step:      a-1     a       a+1  ...   b      b+1
//                      Begin----------------End
//     live:        .     X        X   ...   X       .
//
// Within the body every non-persistent buffer has exactly one Alloc and one Free. Persistent
// buffers (parameters, parameter gradients, optimizer states, loss-scaler state) are allocated in
// setup or lazily with a guard, and survive the body; parameter gradients are freed by
// kZeroGradients when zero_grad is set_to_none.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/program/loss_scaling.h"
#include "analyzer/program/memory_category.h"
#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/loss_kind.h"
#include "analyzer/vocabulary/name_table.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/zero_grad_mode.h"
#include "graph/dim.h"
#include "graph/dtype.h"
#include "graph/ids.h"
#include "graph/symbols.h"

namespace memplan {

using LogicalTime = int64_t;
using BufferId = StrongId<struct BufferIdTag>;

// Why a buffer exists; the executor uses it to initialise storage, reports to label it.
#define MEMPLAN_BUFFER_ROLES(X)                                                                    \
  X(kInput, "input") /* a graph input fed per micro-batch (category kOther) */                     \
  X(kLabel, "label") /* the loss target fed per micro-batch (category kOther) */                   \
  X(kValue, "value") /* a forward value produced by a node (activation or transient) */            \
  X(kCast, "cast")   /* a forward input cast to the op's execution dtype (mixed precision) */      \
  /* a kExtra saved tensor (BN statistics, dropout mask, pool indices) */                          \
  X(kSavedExtra, "saved_extra")                                                                    \
  X(kRecomputed, "recomputed") /* a forward value re-created in backward by a kRecompute step */   \
  X(kLoss, "loss")             /* the scalar loss */                                               \
  /* gradient of a non-parameter value (category kTransients) */                                   \
  X(kValueGradient, "value_gradient")                                                              \
  /* one backward step's contribution before it is accumulated */                                  \
  X(kGradientPart, "gradient_part")                                                                \
  X(kParameterMaster, "parameter") /* the fp32 (or only) copy of a parameter */                    \
  /* the fp16/bf16 working copy of a parameter (mixed precision) */                                \
  X(kParameterWorking, "parameter_working_copy")                                                   \
  /* the accumulated parameter gradient (persistent across micro-batches) */                       \
  X(kParameterGradient, "parameter_gradient")                                                      \
  /* momentum, Adam moments, Adafactor row/column statistics */                                    \
  X(kOptimizerState, "optimizer_state")                                                            \
  /* fp32 copies of gradients made by a non-fused mixed-precision optimizer */                     \
  X(kMasterGradient, "master_gradient")                                                            \
  X(kWorkspace, "workspace") /* kernel scratch of one step */                                      \
  X(kScalar, "scalar")       /* small bookkeeping tensors: found_inf, gradient norm, loss scale */ \
  /* a quantised frozen weight's constants (absmax, scales; uint8 bytes) */                        \
  X(kQuantizationState, "quantization_state")                                                      \
  /* A tensor's copy in the other memory space (--offload): a saved tensor packed to the host */   \
  /* or unpacked back to the GPU, the host copy of a parameter or gradient a CPU optimizer */      \
  /* reads. */                                                                                     \
  X(kOffloadCopy, "offload_copy")                                                                  \
  /* An intermediate torch.optim's step allocates and frees inside kOptimizerStep (category */     \
  /* kTransients): foreach Adam's sqrt(exp_avg_sq) per parameter, the for-loop's denominators, */  \
  /* a coupled weight decay's gradient copy (analyzer/program/optimizer_transient.h). */           \
  X(kOptimizerTransient, "optimizer_transient")
MEMPLAN_NAMED_ENUM(BufferRole, MEMPLAN_BUFFER_ROLES);

// Where a buffer lives. The simulator counts device bytes against the GPU (peak, breakdown,
// allocator model) and host bytes apart (SimulationResult::host_peak_bytes); --offload decides
// (analyzer/derivation/host_offload.h, saved_tensor_offload.h).
enum class MemorySpace : uint8_t {
  kDevice,  // GPU memory
  kHost,    // pinned host memory (page-locked, so copies run at the link's full rate)
};

struct Buffer {
  BufferId id;
  std::string name;  // "relu_out", "grad(W)", "W.fp16", "adam.exp_avg(W)"
  BufferRole role = BufferRole::kValue;
  MemoryCategory category = MemoryCategory::kTransients;
  DType dtype = DType::kUndefined;
  Shape shape;    // symbolic; what the executor allocates
  Dim bytes;      // symbolic byte size: shape elements * ByteSize(dtype) (scalars: ByteSize)
  ValueId value;  // the graph value it holds or is the gradient of; invalid for synthetic ones
  NodeId node;    // the node whose step creates it; invalid for setup/optimizer buffers
  // Survives the micro-batch body (parameters, their gradients, optimizer and scaler state).
  bool persistent = false;
  // Kept from forward for backward (a saved tensor or a recompute checkpoint). The simulator's
  // saved_activation_bytes sums these at the forward/backward boundary.
  bool held_for_backward = false;
  // kSavedExtra: the op registry's name of the extra saved tensor ("save_mean", "rstd",
  // "dropout_mask"), how a kernel is told where each extra goes. Empty for other roles.
  std::string saved_name;
  MemorySpace space = MemorySpace::kDevice;
  bool on_host() const { return space == MemorySpace::kHost; }
  // Per-rank programs (analyzer/derivation/rank_sharding.h): this buffer is one rank's shard of
  // a tensor of `shard_of_elements` elements. With G = TrainingProgram::shard_ranks and
  // s = ceil(shard_of_elements / G) (this buffer's element count), the rank at position i of its
  // shard group holds elements [i*s, (i+1)*s) of the whole, zeros past its end. 0: a whole tensor.
  int64_t shard_of_elements = 0;
};

#define MEMPLAN_STEP_KINDS(X)                                                                      \
  /* setup: parameters (and mixed-precision working copies) */                                     \
  X(kAllocateParameters, "allocate_parameters")                                                    \
  X(kInitLossScaler, "init_loss_scaler") /* setup (fp16): loss scale and growth tracker */         \
  X(kLoadMicroBatch, "load_micro_batch") /* body: graph inputs and the label are copied in */      \
  X(kForward, "forward")                 /* body: one graph node */                                \
  X(kLoss, "loss")                       /* body: the appended loss op (mean loss / k) */          \
  X(kLossBackward, "loss_backward")      /* body: gradient of the loss w.r.t. the model output */  \
  X(kRecompute, "recompute")             /* body: a forward node re-run inside backward */         \
  X(kBackward, "backward")               /* body: one graph node's backward */                     \
  /* body: add one gradient contribution into grad(param) */                                       \
  X(kAccumulateGradient, "accumulate_gradient")                                                    \
  /* body (autocast): a parameter gradient part computed in the working dtype is cast to the */    \
  /* parameter's (ToCopyBackward) */                                                               \
  X(kCastGradient, "cast_gradient")                                                                \
  /* optimizer phase (fp16): grads *= 1/scale, found_inf */                                        \
  X(kUnscaleAndCheckOverflow, "unscale_and_check_overflow")                                        \
  X(kClipGradients, "clip_gradients") /* optimizer phase: global norm clip */                      \
  X(kOptimizerStep, "optimizer_step") /* optimizer phase: update masters (and working copies) */   \
  /* optimizer phase: free (set_to_none) or zero the gradients */                                  \
  X(kZeroGradients, "zero_gradients")                                                              \
  /* Per-rank programs only (analyzer/derivation/rank_sharding.h): a collective of the data- */    \
  /* parallel group (all-gather of parameters, reduce-scatter or all-reduce of gradients). Its */  \
  /* memory (gathered parameters, gradient shards, buckets) is its Begin/End events. */            \
  X(kCollective, "collective")                                                                     \
  /* Per-rank programs, ZeRO-2/3 (DeepSpeed contiguous_gradients): a ready gradient (its only */   \
  /* input) copied into the reduce bucket (its only output) at Step::bucket_offset elements; */    \
  /* its End frees the gradient. The bucket's reduce collective reads what these copies put */     \
  /* there. */                                                                                     \
  X(kBucketCopy, "bucket_copy")                                                                    \
  /* --offload: a copy between GPU and pinned host memory over the host link (Step::transfer). */  \
  /* Its inputs are the sources, its outputs the destinations; its Begin allocates destinations */ \
  /* that did not exist yet. */                                                                    \
  X(kTransfer, "transfer")
MEMPLAN_NAMED_ENUM(StepKind, MEMPLAN_STEP_KINDS);

// One allocation or free. A guarded event happens only when `guard` is (not) live at that moment;
// derivation uses guards for lazy persistent allocations and for AccumulateGrad's steal:
//   kAccumulateGradient Begin: Free(part) if grad not live; Alloc(grad) if grad not live
//                       End:   Free(part) if part live
// so the first contribution becomes the gradient without a copy and later ones are added. The
// steal is stated, not inferred: the Alloc(grad) event names the part in `storage_of`, so a
// concrete interpreter hands the part's storage to the gradient instead of allocating.
struct MemoryEvent {
  enum class Action : uint8_t { kAlloc, kFree };
  enum class Guard : uint8_t { kNone, kIfLive, kIfNotLive };
  Action action = Action::kAlloc;
  BufferId buffer;
  Guard guard = Guard::kNone;
  BufferId guard_buffer;  // valid when guard != kNone
  // kAlloc only: the buffer, freed earlier in the same Begin, whose storage this one takes over
  // (same dtype, shape and category). Invalid: fresh storage.
  BufferId storage_of;
};

// A mixed-precision cast the step performs before its kernel: target = cast(source).
struct CastOp {
  BufferId source;
  BufferId target;
};

// Where one backward step writes the gradient of one input slot.
struct GradientWrite {
  int slot = 0;
  BufferId target;  // grad(value) for activations; the contribution buffer for parameters
  // The step adds into an existing `target` through a temporary `part` (allocated at Begin, freed
  // at End), as autograd's InputBuffer does when a value has several consumers.
  BufferId part;  // invalid when the step writes `target` directly
};

// One parameter's buffers (index = position in TrainingProgram::parameters).
struct ParameterBuffers {
  ValueId value;
  BufferId master;    // fp32 in mixed precision; the only copy otherwise
  BufferId working;   // fp16/bf16 copy in mixed precision; invalid otherwise
  BufferId gradient;  // persistent; invalid when no gradient reaches the parameter
  std::vector<BufferId> optimizer_states;  // in the optimizer's order (exp_avg, exp_avg_sq)
  BufferId master_gradient;  // fp32 grad copy for non-fused mixed optimizers; invalid otherwise
  // A frozen weight stored quantised (--base-dtype int8/nf4): its constants; the master then
  // holds the codes and every read dequantises it (a kCast). Invalid otherwise.
  BufferId quantization_state;
  // --offload optimizer / optimizer+params (analyzer/derivation/host_offload.h): the host copy of
  // the parameter that the CPU optimizer updates (the master itself when the master moved, else a
  // host twin of it) and the host copy of the gradient it reads. Invalid otherwise.
  BufferId host_parameter;
  BufferId host_gradient;
};

// What a kCollective step communicates: the kind and the full (unsharded) payload in bytes, from
// which the cost model derives the ring time (analyzer/cost/collective_cost.h).
#define MEMPLAN_COLLECTIVE_KINDS(X)   \
  X(kAllGather, "all_gather")         \
  X(kReduceScatter, "reduce_scatter") \
  X(kAllReduce, "all_reduce")
MEMPLAN_NAMED_ENUM(CollectiveKind, MEMPLAN_COLLECTIVE_KINDS);
// The ranks a collective runs among, and so its link: every data-parallel rank (across nodes the
// ring runs at the slower link), the ranks of this rank's node (the intra-node link), or this
// rank's peers on the other nodes, one per node (the inter-node link; hybrid-shard's replicas).
enum class CollectiveGroup : uint8_t { kAllRanks, kWithinNode, kAcrossNodes };
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t payload_bytes = 0;  // bytes of the full tensor(s) the group gathers or reduces
  // Gradient collectives issued during backward overlap with the remaining backward compute, as
  // DDP's buckets and ZeRO's reduce buckets do; the optimizer phase's do not.
  bool overlaps_backward = false;
  CollectiveGroup group = CollectiveGroup::kAllRanks;
};

// What a kTransfer step copies over the host link. Its payload is the bytes of its device-side
// buffers (the inputs of a copy to the host, the outputs of a copy to the device), which the cost
// model divides by the link's rate (analyzer/cost/offload_cost.h).
#define MEMPLAN_TRANSFER_DIRECTIONS(X) X(kToHost, "to_host") X(kToDevice, "to_device")
MEMPLAN_NAMED_ENUM(TransferDirection, MEMPLAN_TRANSFER_DIRECTIONS);
// The compute a transfer hides behind: a copy issued on a side stream while the forward (or
// backward) runs costs only what exceeds that compute; kNone is a copy the compute waits for.
enum class TransferOverlap : uint8_t { kNone, kForward, kBackward };
struct Transfer {
  TransferDirection direction = TransferDirection::kToHost;
  TransferOverlap overlap = TransferOverlap::kNone;
};

struct Step {
  StepKind kind = StepKind::kForward;
  NodeId node;          // the graph node (kForward, kBackward, kRecompute); invalid otherwise
  std::string name;     // node name or a fixed label ("loss", "optimizer"); used in reports
  std::string op_type;  // the op a kernel runs (node op, loss op); empty for bookkeeping steps
  std::string domain;
  DType compute_dtype =
      DType::kUndefined;  // execution dtype (mixed precision); undefined: as graph

  // Forward / recompute / loss: per node input slot, the buffer the kernel reads (after casts;
  // invalid for omitted and constant inputs), and per output slot the buffer it writes (a view
  // output names its base's buffer). Empty for backward steps: forward buffers may be dead by
  // then; a backward kernel reads only `saved` and `output_gradients`.
  std::vector<BufferId> inputs;
  std::vector<BufferId> outputs;
  std::vector<CastOp> casts;
  std::vector<BufferId> extras;  // kExtra saved tensors created (forward/recompute)

  // Backward: the saved tensors it reads (in the SavedRule's order), the gradient of each output
  // slot (invalid when that output has none) and where input gradients go.
  std::vector<BufferId> saved;
  std::vector<BufferId> output_gradients;
  std::vector<GradientWrite> input_gradients;
  BufferId workspace;  // backward workspace; invalid when none

  // kAccumulateGradient: part -> parameter gradient. kUnscale/kClip/kOptimizerStep/kZero: every
  // entry of TrainingProgram::parameters with a gradient.
  int parameter = -1;  // index into parameters for kAccumulateGradient
  BufferId accumulate_part;

  Collective collective;      // kCollective only
  int64_t bucket_offset = 0;  // kBucketCopy: where in the bucket the gradient starts (elements)
  Transfer transfer;          // kTransfer only

  std::vector<MemoryEvent> begin;  // allocations (and steal frees) before the kernel runs
  std::vector<MemoryEvent> end;    // frees after it ran
};

struct StepRange {
  LogicalTime begin = 0;  // inclusive
  LogicalTime end = 0;    // exclusive
  LogicalTime size() const { return end - begin; }
  bool contains(LogicalTime t) const { return t >= begin && t < end; }
};

// One term of the loss the program appends. The loss is the sum of its terms, as a model with
// several trained heads trains (`(l1 + l2).backward()`: autograd seeds the sum and AddBackward
// hands the same gradient to every term); a single-output loss has one term.
struct LossTerm {
  LossKind kind = LossKind::kAuto;  // resolved: never kAuto after derivation
  ValueId output;                   // the model output the term reads
  // Cross entropy: the logits' dimension holding the classes (analyzer/program/loss_spec.h);
  // the label has the logits' shape without it.
  size_t class_axis = 1;
  LogicalTime step = -1;           // its kLoss step
  LogicalTime backward_step = -1;  // its kLossBackward step; -1 when no gradient reaches it
  BufferId loss;                   // its scalar
  BufferId label;                  // its label; invalid for the sum loss
};

struct TrainingProgram {
  SymbolTable symbols;  // a copy of the graph's, so sizes print and bind without the graph
  std::optional<SymbolId> batch_symbol;

  std::vector<Buffer> buffers;  // indexed by BufferId
  std::vector<Step> steps;      // indexed by LogicalTime
  StepRange setup;              // run once
  StepRange micro_batch;        // run k times per optimizer step
  StepRange optimizer;          // run once per optimizer step, after the k-th micro-batch
  // The last kLoss step: the forward/backward boundary inside the body (saved_activation_bytes).
  LogicalTime loss_step = -1;
  // The loss's terms in order, one per loss output (their kLoss steps are consecutive, the last
  // at loss_step). `loss`, `loss_buffer` and `label_buffer` below are the first term's.
  std::vector<LossTerm> loss_terms;

  std::vector<ParameterBuffers> parameters;
  int64_t accumulation_steps = 1;  // k; the simulator may override it

  // What the program was derived with (echoed into reports).
  LossKind loss = LossKind::kAuto;  // resolved: never kAuto after derivation
  OptimizerKind optimizer_kind = OptimizerKind::kAdam;
  // The step's implementation (--optimizer-impl); it decides the kOptimizerTransient buffers.
  OptimizerImpl optimizer_impl = OptimizerImpl::kFused;
  Precision precision = Precision::kFp32;
  AmpMode amp_mode = AmpMode::kMasterWeights;  // the regime (analyzer/precision/amp_regime.h)
  LossScaling loss_scaling;  // resolved: none in fp32, the option or the precision's default
  ZeroGradMode zero_grad = ZeroGradMode::kSetToNone;
  std::vector<NodeId> recomputed;  // nodes re-run in backward (sorted)
  // Data parallelism: the number of ranks this program is one rank of (1: a single-GPU program)
  // and the strategy's name ("ddp", "zero3"; empty for a single-GPU program).
  int64_t data_parallel_ranks = 1;
  std::string data_parallel_strategy;
  // The ranks a sharded state is split over (Buffer::shard_of_elements): every rank, or the GPUs
  // of one node for hybrid-shard. Rank r is at position r % shard_ranks of its shard group, whose
  // members are the ranks of one node (r / shard_ranks); 1 without data parallelism.
  int64_t shard_ranks = 1;
  // What moves to host memory (--offload); the optimizer step runs on the CPU when
  // OffloadsOptimizer(offload).
  OffloadMode offload = OffloadMode::kNone;
  BufferId loss_buffer;
  BufferId label_buffer;       // invalid for the sum loss
  BufferId loss_scale_buffer;  // the dynamic loss scale (kScalar); invalid without one

  const Buffer& buffer(BufferId id) const { return buffers.at(id.index()); }
  const Step& step(LogicalTime t) const { return steps.at(static_cast<size_t>(t)); }
  // Steps of one kind in the body (tests and reports).
  int64_t CountSteps(StepKind kind) const;
};

// A readable dump: buffers with symbolic sizes, then every step with its events, e.g.
//   b3 relu_out  activations float32 [batch, 3] bytes=12*batch
//   t5 forward Relu_1 (Relu)  begin +b3  end -b2
std::string ToString(const TrainingProgram& program);
// One line for a step ("forward Relu_1 (Relu)  begin +b3  end -b2").
std::string StepToString(const TrainingProgram& program, LogicalTime t);

}  // namespace memplan
