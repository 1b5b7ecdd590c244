// schedules/pipeline_order.hpp: the order in which one pipeline rank runs its
// (microbatch, chunk, pass) work items, and where each of its chunks sits.
//
// 1F1B (PipeDream-Flush): rank r runs min(pp - r - 1, M) warm-up forwards, then
// alternates one forward and one backward, then drains the remaining backwards.
// Interleaved 1F1B (Megatron-Core, get_forward_backward_func with vpp > 1): M x vpp items
// per rank, warm-up = (pp - r - 1) x 2 + (vpp - 1) x pp forwards (all of them when
// M == pp); the k-th forward runs chunk (k mod (pp vpp)) / pp on microbatch
// (k / (pp vpp)) pp + k mod pp, the k-th backward the same microbatch on chunk
// vpp - 1 - (k mod (pp vpp)) / pp. Needs M to be a multiple of pp.
// Chunk c of rank r is virtual stage c pp + r of the pp_layout.
// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B's order with
// the backward split into B (input gradient, on the critical path) and W (weight
// gradient); rank r keeps its last r W passes pending and runs them when the pipeline
// drains, so the cool-down waits are filled: bubble (pp-1)(F+B-2W) in the DualPipe
// repository's notation (B the full backward) when F equals B - W, as the paper assumes.
// DualPipe (DeepSeek-V3 report, section 3.2.1; deepseek-ai/DualPipe dualpipe.py): two
// pipelines over the same pp ranks in opposite directions, M/2 microbatches each (fed
// at rank 0 and at rank pp-1); rank r holds stage r of the first and stage pp-1-r of the
// second (2x parameters). Each rank runs the repository's eight steps: forwards of the
// near pipeline, forwards of both, zero-bubble B W F of the far one, the main loop of
// overlapped forward-backward pairs (F&B, one chunk's forward with the other's
// backward), backwards, then the deferred W passes. Needs pp even and M >= 2 pp, even.
// DualPipeV (dualpipev.py, Sea AI Lab's "cut-in-half"): one pipeline of 2 pp stages over
// pp ranks in a V: rank r holds stages r and 2pp-1-r; the same eight steps. M >= 2 pp.
// The bubble of both is (S/2-1)(F&B+B-3W) for S stages when F = B - W = W and F&B = F+B.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "schedules/schedule_kind.hpp"
#include "sim_core/names.hpp"

namespace moesim::schedules {

// A valid scenario whose schedule moesim cannot simulate yet.
class NotSimulated : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// forward; backward: the full backward (input and weight gradients); the zero-bubble
// split: backward_input (on the critical path) and backward_weight (deferrable).
enum class Pass : std::uint8_t { forward, backward, backward_input, backward_weight };
const sim_core::NameTable<Pass>& pass_names();

struct WorkItem {
  int microbatch = 0;
  int chunk = 0;
  Pass pass = Pass::forward;
  // Runs overlapped with the next item (DualPipe's F&B pair: a forward and a backward).
  bool overlap_next = false;
  bool forward() const { return pass == Pass::forward; }
  // Computes weight gradients (what the gradient reduce-scatter waits for).
  bool weights() const { return pass == Pass::backward || pass == Pass::backward_weight; }
  // Receives an input (forward) or output gradient (backward, backward_input).
  bool communicates() const { return pass != Pass::backward_weight; }
};

// Where a rank's chunk sits: its pipeline (DualPipe runs two), its stage there, and the
// pp_layout stage whose layers it runs.
struct StagePlace {
  int pipeline = 0;
  int stage = 0;
  int layout_stage = 0;
  bool descending = false;  // its next stage sits on a lower rank (DualPipe's reverse
                            // pipeline, DualPipeV's second leg)
};

class PipelineShape {
 public:
  // ranks: pipeline ranks (devices); chunks: vpp (interleaved), 2 (DualPipe, DualPipeV), 1.
  PipelineShape(ScheduleKind kind, int ranks, int vpp);
  int ranks() const { return ranks_; }
  int chunks() const { return chunks_; }
  int pipelines() const { return kind_ == ScheduleKind::dualpipe ? 2 : 1; }
  int stages() const;         // per pipeline
  int layout_stages() const;  // stages of the pp_layout
  StagePlace place(int rank, int chunk) const;
  // A unique id of (pipeline, stage): pairs the two ends of a pipeline transfer.
  int stage_id(const StagePlace& p) const { return p.pipeline * stages() + p.stage; }

 private:
  ScheduleKind kind_;
  int ranks_, chunks_;
};

// Throws std::invalid_argument for impossible sizes. `overlap_pairs` (Megatron-Core's
// MoE all-to-all overlap, --overlap-moe-expert-parallel-comm): 1F1B's and interleaved
// 1F1B's steady-state forward and the backward after it run as an overlapped pair, one
// microbatch's EP communication beside the other's computation, as DualPipe's pairs do;
// the warm-up takes one more forward, as Megatron-Core's combined 1F1B does, so that a
// pair's forward and backward are of different microbatches (the first forward and the
// last backward run alone; docs/research/megatron-step-edges.md A).
std::vector<WorkItem> pipeline_order(ScheduleKind kind, int pp, int vpp, int rank, int microbatches,
                                     bool overlap_pairs = false);

}  // namespace moesim::schedules
