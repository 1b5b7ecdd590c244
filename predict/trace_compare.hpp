// predict/trace_compare.hpp: a profiled trace's kernels against the step simulation's, by
// kernel class (calibration/kineto_trace.hpp), behind `moesim calibrate trace` (issue #25
// item 7).
//
// Two windows:
//   step        the trace is one whole step of the scenario: the critical rank's kernels
//               of the simulated step (the trace recorded, every microbatch simulated);
//   microbatch  the trace holds N microbatches' forward and backward chunks (DeepSeek's
//               train.json: one DualPipe forward / backward pair, N = 1): what one more
//               microbatch adds to the critical rank, from two simulated steps of M1 and
//               M2 microbatches (the steady state of predict.hpp, M1 = 2 V, M2 = M1 + V),
//                 per microbatch = (totals(M2) - totals(M1)) / (M2 - M1),
//               times N. The step's own work (optimizer, DP collectives, warm-up) cancels.
// moesim's kernels map onto the classes by their template: the kernel class of their
// compute work, EP dispatch (and its notify / all-gather) and combine by their
// communication op, TP and the kernels outside the layers that communicate (DP, PP, the
// loss and amax all-reduces) as communication, the memory-bound kernels whose names are
// norms as norm, the rest (permutes, activations, the optimizer) elementwise. The host
// thread's CPU time goes to the schedule node of each host op's label (host_node_of),
// over the same window.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/kineto_trace.hpp"
#include "config/scenario.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::predict {

struct PredictedKernels {
  calibration::TraceTotals totals;  // over the window, scaled to `microbatches`
  // The host thread's CPU time over the window by schedule node (host_node_of), the
  // host's work outside the layers' nodes last as "(outside the nodes)".
  std::vector<calibration::HostNode> host_nodes;
  std::optional<std::int64_t> microbatches;  // the microbatch window's N; absent: the step
  std::int64_t m1 = 0, m2 = 0;               // the microbatch window's two simulated steps
  int rank = 0;                              // the critical rank whose kernels these are
};

// `microbatches`: absent for the step window, else N >= 1.
PredictedKernels predicted_kernels(const config::Scenario& sc,
                                   std::optional<std::int64_t> microbatches);

// A simulated kernel's class (schedules::StepResult label_kinds, its span's comm, its name).
calibration::TraceClass trace_class(const schedules::LabelKind& kind, std::uint8_t comm,
                                    const std::string& label);

// The schedule node a host op's CPU time belongs to, named as DeepSeek's DualPipe names
// its nodes (calibration::HostNode): the module's part of a layer, attn (attention and the
// router, which runs before the dispatch), dispatch (the EP preprocess and dispatch), mlp
// (the experts, the shared expert, a dense MLP) or combine, and the label's pass, F
// (forward), B (backward and recompute) or W (weight gradients); "" outside the layers'
// nodes (graph launches, the optimizer, DP and PP work, embedding and head).
std::string host_node_of(const schedules::LabelKind& kind);

}  // namespace moesim::predict
