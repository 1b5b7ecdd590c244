// predict/moe_layer_check.hpp: one MoE layer timed alone, against the step simulation.
//
// Megatron-LM's moe_perf harness (calibration/measurements/moe-layer-h100-mlm.json) builds
// one MoELayer (router, token dispatcher, TransformerEngine's grouped-GEMM experts, the
// shared expert where the model has one) on one node, runs its forward and backward after a
// long FP32 matmul that puts the host ahead of the GPU, and times each by CUDA events on the
// compute stream: the GPU time from the layer's first kernel to its last, an idle gap
// after a device-host sync included. A case runs here as a scenario of the same model cut
// to one decoder layer, the set's GPUs all in one EP group, one microbatch a rank, at the
// short benchmark's clocks (efficiency.sustained_clock_factor 1: the presets' efficiencies
// are short benchmarks' too), launched as the harness is (torch.distributed.run, no NUMA
// binding), on the release nearest the harness's Megatron (25.11), with no data-parallel
// communication in the passes (the harness has no DDP wrapper). The times are rank 0's
// spans of the MoE block's kernels in the decoder layer's forward and backward: from the
// first to the last kernel of the router, the EP preprocess, the dispatch, the shared
// expert, the experts and the combine, the pre-MLP norm left out (MoELayer has none).
// What the harness measures that the span also holds: the dispatcher's host sync and the
// host's launches after it. What it does not: the embedding, attention and head the
// scenario's layer carries around the block.
#pragma once

#include <string>

#include "calibration/measurement.hpp"
#include "config/scenario.hpp"

namespace moesim::predict {

struct MoeLayerTimes {
  double forward_ms = 0, backward_ms = 0;
};

// The scenario of one case on `system` (a preset name; the measurement's).
config::Scenario moe_layer_scenario(const calibration::MoeLayerSet& set,
                                    const calibration::MoeLayerPoint& c, const std::string& system);

// Rank 0's MoE-block spans in the first decoder layer (see above). Throws
// std::invalid_argument where the scenario's layer has no MoE block.
MoeLayerTimes moe_layer_times(const config::Scenario& sc);

}  // namespace moesim::predict
