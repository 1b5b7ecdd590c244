#include "predict/routing_fit.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "calibration/bisect.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"
#include "predict/validate.hpp"
#include "workload/routing.hpp"

namespace moesim::predict {

namespace {

// The trained run of a qualifying pair: its family's router was pretrained with global-batch
// balance, and its file leaves the dispersion to the fit.
bool fits_sigma(const config::Scenario& sc) {
  return sc.routing.trained() && sc.model.is_moe() &&
         workload::trained_routing(sc.model).global_batch && !sc.gave("routing.popularity_sigma");
}

double pct(double predicted, double measured) {
  return 100 * (predicted / measured - 1);
}

struct Pair {
  std::size_t trained, forced;  // indices into the runs
  std::string source;
};

}  // namespace

RoutingFitResult fit_global_batch_sigma(const std::vector<config::Scenario>& runs, int jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < runs.size(); ++i) by_name.emplace(runs[i].name, i);
  std::vector<Pair> pairs;
  for (std::size_t b = 0; b < runs.size(); ++b) {
    if (!runs[b].measured) continue;
    for (const auto& c : runs[b].measured->compare_with) {
      const auto a = by_name.find(c.run);
      if (c.decision != config::Decision::routing || a == by_name.end()) continue;
      const auto& A = runs[a->second];
      const auto& B = runs[b];
      const bool b_trained = fits_sigma(B) && A.routing.balance == workload::RoutingBalance::forced;
      const bool a_trained = fits_sigma(A) && B.routing.balance == workload::RoutingBalance::forced;
      if (!a_trained && !b_trained) continue;
      pairs.push_back({b_trained ? b : a->second, b_trained ? a->second : b,
                       c.source.empty() ? B.measured->source : c.source});
    }
  }
  if (pairs.size() < 2)
    throw std::invalid_argument(fmt::format(
        "calibrate routing: {} measured pair{} of a global-batch-balanced router's dropless run "
        "against forced balance (decision routing); the fit and its leave-one-out error need "
        "two or more",
        pairs.size(), pairs.size() == 1 ? "" : "s"));

  RoutingFitResult out;
  // Forced runs once.
  std::vector<double> forced_pred(pairs.size()), forced_meas(pairs.size()),
      trained_meas(pairs.size());
  run_parallel(pairs.size(), jobs, [&](std::size_t i) {
    const auto& f = runs[pairs[i].forced];
    const ValidateRow r = validate_row(f.file, f, predict(f));
    forced_pred[i] = r.predicted_per_gpu();
    forced_meas[i] = r.measured_per_gpu();
  });
  out.simulations = static_cast<int>(pairs.size());
  // The trained runs' predicted throughput at a sigma, each simulated once per sigma; their
  // measured throughput (the same at every sigma) comes with the first.
  std::map<std::pair<std::size_t, double>, double> cache;
  std::mutex m;
  const auto ratios_at = [&](double sigma) {
    std::vector<double> r(pairs.size());
    run_parallel(pairs.size(), jobs, [&](std::size_t i) {
      {
        const std::scoped_lock lock(m);
        if (const auto it = cache.find({i, sigma}); it != cache.end()) {
          r[i] = it->second / forced_pred[i];
          return;
        }
      }
      config::Scenario sc = runs[pairs[i].trained];
      sc.routing.popularity_sigma = sigma;
      const ValidateRow row = validate_row(sc.file, sc, predict(sc));
      const double p = row.predicted_per_gpu();
      const std::scoped_lock lock(m);
      trained_meas[i] = row.measured_per_gpu();
      cache[{i, sigma}] = p;
      ++out.simulations;
      r[i] = p / forced_pred[i];
    });
    return r;
  };
  const auto measured_ratio = [&](std::size_t i) { return trained_meas[i] / forced_meas[i]; };
  // The fit over the pairs `use` (all but `skip`).
  const auto fit = [&](std::size_t skip) {
    return calibration::golden_min(
        [&](double sigma) {
          const auto r = ratios_at(sigma);
          double cost = 0;
          for (std::size_t i = 0; i < pairs.size(); ++i)
            if (i != skip) cost += std::pow(std::log(r[i] / measured_ratio(i)), 2);
          return cost;
        },
        0.0, kSigmaMax, kSigmaIterations);
  };
  out.sigma = fit(pairs.size());
  const auto at_fit = ratios_at(out.sigma);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto& t = runs[pairs[i].trained];
    RoutingFitPair p;
    p.trained = t.name;
    p.forced = runs[pairs[i].forced].name;
    p.name = p.trained + " vs " + p.forced;
    p.source = pairs[i].source;
    p.measured_ratio = measured_ratio(i);
    p.fitted_ratio = at_fit[i];
    p.loo_sigma = fit(i);
    p.loo_ratio = ratios_at(p.loo_sigma)[i];
    config::Scenario stat = t;
    stat.routing.popularity_sigma.reset();
    p.statistic_sigma = workload::routing_sigma(stat.routing);
    p.statistic_ratio = ratios_at(p.statistic_sigma)[i];
    out.pairs.push_back(std::move(p));
  }
  const auto mean = [&](double RoutingFitPair::*ratio) {
    double s = 0;
    for (const auto& p : out.pairs) s += std::abs(pct(p.*ratio, p.measured_ratio));
    return s / static_cast<double>(out.pairs.size());
  };
  out.statistic_mean_abs_error_pct = mean(&RoutingFitPair::statistic_ratio);
  out.mean_abs_error_pct = mean(&RoutingFitPair::fitted_ratio);
  out.loo_mean_abs_error_pct = mean(&RoutingFitPair::loo_ratio);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace moesim::predict
