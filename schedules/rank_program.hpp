// schedules/rank_program.hpp: one pipeline rank's host program (sim_core::HostProgram),
// the interpreter of its work items (schedules/pipeline_order.hpp). Internal to the step
// simulation (schedules/step_sim.hpp).
//
// The host walks the rank's items lazily, one at a time, and for each launches:
//   - the receive of its input activation (forward) or output gradient (backward) unless
//     it is the first (last) stage of its pipeline; the interleaved schedule posts the
//     next item's receive while this one computes (Megatron's --overlap-p2p-communication);
//   - its stage's layers' kernels (schedules/kernel_pricing.hpp), forward in order or
//     backward in reverse, each after the host's cost of launching it; CUDA-graph-captured
//     modules cost one graph launch per run of captured kernels (Megatron captures one
//     graph per layer and pass); a kernel whose result the host needs (dropless MoE's
//     token counts) makes it wait, possibly a few launches later (sync_delay);
//   - its send to the next (previous) stage after its last kernel.
// Data-parallel traffic hooks in at layer boundaries (schedules/dp_plan.hpp): the
// distributed optimizer's bucket all-gathers before the first forward (waited for per
// bucket with --overlap-param-gather, else all before it), the buckets' gradient
// reductions after the chunk's last weight gradients (--overlap-grad-reduce; else after
// the last backward), FSDP's per-unit gather (with the next unit prefetched) and
// reduce-scatter; the optimizer step at the end waits for the last reduction.
// Overlapped pairs (DualPipe, 1F1B's steady state with framework.moe_a2a_overlap): the
// forward chunk on the compute stream, the backward on the pair stream, in phases that
// put one chunk's EP communication beside the other's computation (DeepSeek-V3 report,
// Figure 4); with --delay-wgrad-compute the backward's weight-gradient GEMMs move after
// the next EP communication kernel.
#pragma once

#include <cstdint>
#include <memory>

#include "schedules/step_state.hpp"
#include "sim_core/host.hpp"

namespace moesim::schedules::detail {

// A rank's GPU streams. Pipeline transfers have a stream per direction and kind; stages
// whose pipeline runs toward lower ranks (DualPipe's reverse pipeline, DualPipeV's second
// leg) their own four, so that transfers to the two neighbours never queue behind each
// other. Overlapped pairs run the backward chunk on a second compute stream.
enum Track : int {
  kComputeStream,
  kPpFwdSend,
  kPpFwdRecv,
  kPpBwdSend,
  kPpBwdRecv,
  kDpStream,
  kDpGatherStream,
  kPp2FwdSend,
  kPp2FwdRecv,
  kPp2BwdSend,
  kPp2BwdRecv,
  kPairStream,
  kOffloadStream,  // layer offloading's copies (framework.offload_layers)
  kDpOuterStream,  // HSDP's gradient reductions across optimizer instances
  kTracks
};
extern const char* const kTrackNames[kTracks];

// `global` is the Megatron rank with every rank simulated (StepState::full), else the
// pipeline rank.
std::unique_ptr<sim_core::HostProgram> make_rank_program(StepState& sim, sim_core::Gpu& gpu,
                                                         std::int64_t global);

}  // namespace moesim::schedules::detail
