// workload/routing.hpp: how unevenly routed tokens load the expert-parallel ranks.
//
// Every EP all-to-all waits for the rank that receives the most tokens, and that rank's
// permute, expert GEMMs and combine are the longest; so a MoE layer runs at the pace of
// its hottest rank. The step simulation prices the layer for that rank: it receives
// G x the balanced T x top-k token copies, G = max_r load_r / mean_r load_r, averaged
// over the MoE layers (each layer routes differently). Experts sit on ranks in
// Megatron's order: rank r holds experts [r E/ep, (r+1) E/ep).
//
//   forced (Megatron --moe-router-force-load-balancing): every expert gets the same
//     tokens, G = 1.
//   sampled: expert popularity p_e (uniform, or Zipf: p_e ~ (pi(e)+1)^-alpha over a
//     permutation pi drawn per layer), turned into the probability that a token selects
//     expert e among its k distinct experts, q_e = min(1, c p_e) with sum_e q_e = k (a
//     token cannot pick one expert twice); each expert's count over the n = T x ep tokens
//     of the EP group is drawn as Binomial(n, q_e), by its normal approximation
//     (n is in the thousands), from a Mersenne Twister seeded by (seed, layer).
//   histogram: measured per-expert token counts, one row per MoE layer (cycled when the
//     model has more layers than rows), G per row as above.
// Same input, same G: the draws depend only on the seed and the layer.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::workload {

// G of one layer's per-expert counts (size E, E divisible by ep).
double hottest_rank_load(const std::vector<double>& expert_counts, std::int64_t ep);

// G averaged over the model's MoE layers; tokens: tokens per EP rank per microbatch.
// `capacity_factor` (training.token_drop, Megatron --moe-expert-capacity-factor): each
// expert keeps at most capacity_factor x its balanced share (Megatron's get_capacity on
// every source rank: tokens x top-k / experts x factor) and drops the rest, so no rank
// receives more than capacity_factor x the balanced tokens.
double ep_gating_load(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                      std::optional<double> capacity_factor = std::nullopt);

}  // namespace moesim::workload
