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
//   aux_loss (Megatron --moe-aux-loss-coeff c) and loss_free (DeepSeek's expert bias):
//     trained routing, from published expert-load statistics (docs/research/
//     routing-load-statistics.md). Wang et al., "Auxiliary-Loss-Free Load Balancing
//     Strategy for Mixture-of-Experts" (arXiv 2408.15664), measure the global MaxVio,
//     (max_e load_e - mean) / mean over a validation set, of 64-expert top-6 models:
//       loss_free                 0.04 (Table 2, 1B and 3B; Tables 3-4: 0.028-0.048)
//       aux_loss, c = 0.001       0.52 (Table 2, 3B; 0.72 at 1B)
//     and c enters as a power law, MaxVio(c) = 0.52 (c / 0.001)^-0.219, the exponent from
//     the paper's two coefficients of its 1B model: 0.72 at c = 0.001 (Table 2) and 0.937
//     at c = 0.0003 (Table 6), ln(0.937 / 0.72) / ln(0.001 / 0.0003) = 0.219 (Table 6's
//     gate is softmax, Table 2's sigmoid: an assumption that the gate does not change the
//     slope). The persistent part: expert popularity p_e ~ exp(sigma z_e), z_e ~ N(0, 1)
//     drawn per layer, sigma such that the expected MaxVio of 64 experts is MaxVio(c)
//     (expected_max_vio); the model's own experts then draw from that dispersion (more
//     experts, a larger expected maximum). Per microbatch the counts are Binomial(n, q_e)
//     around it as for sampled (independent tokens: a lower bound of the noise, since
//     real routing is correlated within sequences). EPLB plans on the popularity n q_e.
//     A router pretrained with global-batch balance (Qiu et al., "Demons in the Detail",
//     ACL 2025, 2025.acl-long.249: the balance loss counts expert frequencies over the
//     global batch, so experts specialize by domain; "used in Qwen3-MoEs") is balanced over
//     its pretraining corpus, not over what one run feeds it: its per-layer popularity is
//     far more dispersed than that statistic. Routing::popularity_sigma gives the sigma
//     itself; config sets it for such a family (TrainedRouting::global_batch) from the
//     value `moesim calibrate routing` fits to measured pairs of one recipe run dropless
//     against forced balance (predict/routing_fit.hpp; calibration/profiles/routing.json).
// With parallelism.eplb (workload/eplb.hpp) each layer's experts are replicated and placed
// by DeepSeek's load balancer, planned on the layer's expected loads (sampled: n q_e;
// histogram: the measured row; forced: equal), and G is the hottest GPU's share of the
// realized counts, each expert's tokens split evenly over its copies.
// Same input, same G: the draws depend only on the seed and the layer.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "sim_core/extreme_values.hpp"
#include "workload/eplb.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::workload {

// Wang et al.'s figures (arXiv 2408.15664), above.
inline constexpr double kLossFreeMaxVio = 0.04;           // Table 2
inline constexpr double kAuxLossCoefficient = 0.001;      // Table 2's loss-controlled baseline
inline constexpr double kAuxLossMaxVio = 0.52;            // Table 2, 3B, at kAuxLossCoefficient
inline constexpr double kAuxLossMaxVio1B = 0.72;          // Table 2, 1B, at kAuxLossCoefficient
inline constexpr double kAuxLossCoefficientLow = 0.0003;  // Table 6 (1B, softmax gate)
inline constexpr double kAuxLossMaxVioLow = 0.937;        // Table 6
inline constexpr int kMaxVioExperts = 64;                 // the paper's routed experts (Table 5)
// The power of c: ln(0.937 / 0.72) / ln(0.001 / 0.0003) = 0.219.
double aux_loss_exponent();

// The largest of n standard normals: sim_core::over_max_normal (sim_core/extreme_values.hpp).
using sim_core::over_max_normal;

// The global MaxVio of trained routing (aux_loss, loss_free; 0 for the others).
double trained_max_vio(const Routing& r);
// The popularity sigma trained routing draws with: Routing::popularity_sigma where given,
// else popularity_sigma(trained_max_vio(r)).
double routing_sigma(const Routing& r);
// E[max_e X_e] / E[X] - 1 of `experts` lognormal popularities exp(sigma z).
double expected_max_vio(double sigma, int experts);
// The sigma whose expected MaxVio over kMaxVioExperts experts is `max_vio`.
double popularity_sigma(double max_vio);

// Routing as the model family is trained: the default of a scenario without a `routing`
// block (issue #45 item 2: a hand-written scenario predicts a real training run, not a
// benchmark's forced balance). By Hugging Face model_type, each with the training recipe
// that sets it:
//   deepseek_v3   loss_free   DeepSeek's expert bias (--moe-router-enable-expert-bias; the
//                             sequence-wise aux loss beside it is 1e-4): Megatron-MoE-ModelZoo
//                             model_configs/benchmarking/DeepSeek-V3.yaml:102-110 (e865051),
//                             Megatron-LM examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh:91-102
//   kimi_k2       loss_free   ModelZoo model_configs/benchmarking/Kimi-K2.yaml:93-101 (expert
//                             bias, aux coefficient 0)
//   deepseek_v2   aux_loss 1e-3   ModelZoo model_configs/benchmarking/DeepSeek-V2.yaml:93-98
//                             (seq_aux_loss)
//   qwen3_moe     aux_loss 1e-3   Pai-Megatron-Patch examples/qwen3/run_mcore_qwen3.sh:203-204
//                             (a098ca5); Megatron-LM examples/post_training/modelopt/conf/Qwen/
//                             Qwen3-235B-A22B.sh:33-35 (d98e8a64). Qwen3's released routers were
//                             pretrained with global-batch balancing (Qiu et al., ACL 2025):
//                             global_batch, their popularity sigma the fitted one (above)
//   qwen3_next    aux_loss 1e-3   Megatron-Bridge src/megatron/bridge/models/qwen/
//                             qwen3_next_bridge.py:70-71 at 067f987df: global_aux_loss
//                             (Megatron's global-batch balance) at 1e-3, as Qwen's Qwen3-Next
//                             release describes its training ("global load balancing"):
//                             global_batch as well
//   mixtral       aux_loss 1e-2   Megatron-LM
//   examples/mixtral/train_mixtral_8x7b_distributed.sh:53-54;
//                             ModelZoo model_configs/benchmarking/Mixtral-8x22B.yaml:80-83
//   gpt_oss       aux_loss 0.9    the released config.json's router_aux_loss_coef
//   (openai/gpt-oss-120b
//                             and -20b, scenarios/models/gpt-oss-*.json)
//   any other MoE aux_loss 1e-2   Megatron-Core's MoE README, "Basic MoE Training" (the starting
//                             value it recommends; megatron/core/transformer/moe/README.md:101)
// A model without routed experts trains no router: forced (G = 1, as before).
struct TrainedRouting {
  Routing routing;
  std::string what;    // "aux_loss, coefficient 0.001"
  std::string source;  // the recipe, as above
  bool family = true;  // false: the model type is not in the table (Megatron's recommendation)
  // The family's released routers were pretrained with global-batch balance: trained routing
  // takes the fitted global-batch popularity sigma (above), not the statistic's.
  bool global_batch = false;
};
TrainedRouting trained_routing(const ModelConfig& m);

// G of one layer's per-expert counts (size E, E divisible by ep).
double hottest_rank_load(const std::vector<double>& expert_counts, std::int64_t ep);

// G averaged over the model's MoE layers; tokens: tokens per EP rank per microbatch.
// `capacity_factor` (training.token_drop, Megatron --moe-expert-capacity-factor): each
// expert keeps at most capacity_factor x its balanced share (Megatron's get_capacity on
// every source rank: tokens x top-k / experts x factor) and drops the rest, so no rank
// receives more than capacity_factor x the balanced tokens.
// `rank_capacity` (Megatron-Core --moe-expert-rank-capacity-factor, HybridEP): every EP
// rank's dispatch buffer holds num_tokens x top-k x factor routed copies, the balanced
// receipt times the factor (rounded up to the pad multiple; MCORE passes that static
// budget to HybridEP's non-blocking dispatch, which drops the copies over it and sets
// its overflow flag: docs/research/gb200-journey-mechanisms.md 2.3). So each (layer,
// microbatch)'s G, after expert dropping and EPLB, is min(G, factor).
double ep_gating_load(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                      std::optional<double> capacity_factor = std::nullopt,
                      const std::optional<EplbSetup>& eplb = std::nullopt,
                      std::optional<double> rank_capacity = std::nullopt);

// The spread of one (layer, microbatch)'s G between microbatches of the same layer, over
// its mean: the pooled within-layer standard deviation of kLoadDraws draws per MoE layer
// (fresh per-microbatch counts around the layer's fixed popularity), over the mean G. 0
// for forced routing and histograms (one measured row per layer: no per-microbatch
// spread to draw). Different DP replicas route different microbatches, so their steps
// differ by it (predict/variability.hpp).
inline constexpr int kLoadDraws = 4;
double ep_load_cv(const Routing& r, const ModelConfig& m, std::int64_t ep, double tokens,
                  std::optional<double> capacity_factor = std::nullopt,
                  const std::optional<EplbSetup>& eplb = std::nullopt,
                  std::optional<double> rank_capacity = std::nullopt);

}  // namespace moesim::workload
