// predict/routing_fit.hpp: `moesim calibrate routing`'s fit: the popularity dispersion of
// routers pretrained with global-batch balance (workload::TrainedRouting::global_batch;
// workload/routing.hpp), the one cross-run quantity of such a router that no published
// statistic gives (docs/research/routing-load-statistics.md), fitted to the measured pairs
// that run one recipe twice, once with the trained router (balance aux_loss or loss_free,
// dropless) and once with forced balance: decision `routing` in measured.compare_with, the
// trained run's model of such a family and its file not setting routing.popularity_sigma.
//
// A pair's ratio is the trained run's per-GPU throughput over the forced run's, measured and
// predicted (predict/validate.hpp PairRow). Forced balance has no popularity, so only the
// trained runs are simulated again at each sigma; the fit is
//   sigma* = argmin over sigma in [0, kSigmaMax] of sum_pairs ln^2(predicted / measured ratio)
// by golden section (calibration::golden_min, kSigmaIterations narrowings: the bracket ends
// under 0.01 wide). Pairs, not the runs' own errors: a pair holds the rest of the step (its
// attention, host, communication) equal on both sides, which is what isolates the routing
// (issue #44: a pair measured by one team on one machine tests a mechanism). Each pair's
// leave-one-out ratio is its ratio at the sigma fitted to the other pairs. The statistic's
// ratio is the pair's at the published micro-batch statistic's sigma (what moesim priced
// before this fit; workload::popularity_sigma(trained_max_vio)). reports/routing_fit.hpp
// prints the result and writes calibration/profiles/routing.json.
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace moesim::predict {

inline constexpr double kSigmaMax = 3.0;
inline constexpr int kSigmaIterations = 12;

struct RoutingFitPair {
  std::string name;  // "TRAINED vs FORCED"
  std::string trained, forced, source;
  double statistic_sigma = 0;  // the published statistic's sigma for the trained run
  double measured_ratio = 0;   // trained over forced, per-GPU throughput
  double statistic_ratio = 0;  // predicted at statistic_sigma
  double fitted_ratio = 0;     // predicted at the fitted sigma
  double loo_sigma = 0;        // fitted without this pair
  double loo_ratio = 0;        // predicted at loo_sigma
};

struct RoutingFitResult {
  double sigma = 0;
  std::vector<RoutingFitPair> pairs;
  // Mean |100 (predicted / measured ratio - 1)| at the statistic, fitted, and left out.
  double statistic_mean_abs_error_pct = 0, mean_abs_error_pct = 0, loo_mean_abs_error_pct = 0;
  int simulations = 0;
  double wall_s = 0;
};

// Over the measured runs given (their files loaded; those without such a pair are ignored);
// std::invalid_argument when no pair qualifies. Simulates on `jobs` threads (0: all cores).
RoutingFitResult fit_global_batch_sigma(const std::vector<config::Scenario>& runs, int jobs);

}  // namespace moesim::predict
