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
// MoE block in the decoder layer's forward and backward (the router, the EP preprocess, the
// dispatch, the shared expert, the experts and the combine; the pre-MLP norm left out:
// MoELayer has none). The backward is the span from its first kernel to its last. The
// forward is what the harness's GPU sees with its host ahead: the kernels up to the
// dispatcher's first device-host sync back to back (the long matmul hid their launches),
// then the simulated span from that sync to the last kernel, the host's launches after the
// sync included. What the harness does not have: the embedding, attention and head the
// scenario's layer carries around the block.
//
// The harness builds its TransformerConfig from a few of the proxies' fields only
// (_build_transformer_config, __main__.py at d98e8a64): no gated_linear_unit (a GELU MLP,
// two expert matrices) and no moe_shared_expert_intermediate_size (no shared expert, though
// test_cases.py gives the DeepSeek proxy one); the measurement file's models say so.
#pragma once

#include <string>

#include "calibration/measurement.hpp"
#include "config/scenario.hpp"

namespace moesim::predict {

struct MoeLayerTimes {
  double forward_ms = 0, backward_ms = 0;
  double forward_span_ms = 0;  // the simulated forward, first kernel to last (host behind)
  bool synced = false;         // the forward waited on the device (the dispatcher's sync)
};

// The scenario of one case on `system` (a preset name; the measurement's).
config::Scenario moe_layer_scenario(const calibration::MoeLayerSet& set,
                                    const calibration::MoeLayerPoint& c, const std::string& system);

// Rank 0's MoE-block spans in the first decoder layer (see above). Throws
// std::invalid_argument where the scenario's layer has no MoE block.
MoeLayerTimes moe_layer_times(const config::Scenario& sc);

}  // namespace moesim::predict
