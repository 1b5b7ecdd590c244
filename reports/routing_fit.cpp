#include "reports/routing_fit.hpp"

#include <cmath>

#include <fmt/format.h>

namespace moesim::reports {

namespace {

using J = nlohmann::ordered_json;

// x to `digits` decimals (divided by a power of ten, so that the JSON shows those digits).
double round_to(double x, int digits) {
  const double p = std::pow(10.0, digits);
  return std::round(x * p) / p;
}

double error_pct(double predicted, double measured) {
  return 100 * (predicted / measured - 1);
}

// The fit in one sentence: what it fitted, to what, and its errors.
std::string basis(const predict::RoutingFitResult& r) {
  return fmt::format(
      "fitted by `moesim calibrate routing` to {} measured pairs of one recipe run dropless with "
      "a global-batch-balanced router and with forced balance (squared log ratio errors; mean "
      "absolute ratio error {:.1f}%, leave-one-out {:.1f}%, {:.1f}% at the published "
      "micro-batch statistic's dispersion)",
      r.pairs.size(), r.mean_abs_error_pct, r.loo_mean_abs_error_pct,
      r.statistic_mean_abs_error_pct);
}

J pair_rows(const predict::RoutingFitResult& r) {
  J rows = J::array();
  for (const auto& p : r.pairs)
    rows.push_back({{"pair", p.name},
                    {"measured_ratio", round_to(p.measured_ratio, 4)},
                    {"statistic_sigma", round_to(p.statistic_sigma, 4)},
                    {"statistic_ratio", round_to(p.statistic_ratio, 4)},
                    {"fitted_ratio", round_to(p.fitted_ratio, 4)},
                    {"loo_sigma", round_to(p.loo_sigma, 4)},
                    {"loo_ratio", round_to(p.loo_ratio, 4)},
                    {"loo_error_pct", round_to(error_pct(p.loo_ratio, p.measured_ratio), 1)},
                    {"source", p.source}});
  return rows;
}

}  // namespace

std::string routing_fit_text(const predict::RoutingFitResult& r) {
  std::string o = fmt::format(
      "global-batch router popularity sigma {:.4f} ({})\n\n"
      "{:<76} {:>8} {:>10} {:>10} {:>10} {:>9}\n",
      r.sigma, basis(r), "pair (trained vs forced, per-GPU throughput)", "measured", "statistic",
      "fitted", "left out", "loo err");
  for (const auto& p : r.pairs)
    o += fmt::format("{:<76} {:>8.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>8.1f}%\n", p.name,
                     p.measured_ratio, p.statistic_ratio, p.fitted_ratio, p.loo_ratio,
                     error_pct(p.loo_ratio, p.measured_ratio));
  o += fmt::format("\n{} simulations in {:.1f} s\n", r.simulations, r.wall_s);
  return o;
}

J routing_fit_json(const predict::RoutingFitResult& r) {
  return {{"global_batch_sigma", r.sigma},
          {"statistic_mean_abs_error_pct", r.statistic_mean_abs_error_pct},
          {"mean_abs_error_pct", r.mean_abs_error_pct},
          {"loo_mean_abs_error_pct", r.loo_mean_abs_error_pct},
          {"pairs", pair_rows(r)},
          {"simulations", r.simulations},
          {"wall_s", r.wall_s}};
}

J routing_fit_profile(const predict::RoutingFitResult& r, const std::string& date) {
  const std::string b = basis(r);
  return {{"name", "routing"},
          {"applies_to", "routing"},
          {"system", "all"},
          {"device",
           "every system: a trained router's expert popularity, fitted over measured "
           "pairs of runs"},
          {"date", date},
          {"tool", "moesim calibrate routing"},
          {"source", b},
          {"parameters",
           {{"routing",
             {{"global_batch_sigma",
               {{"value", round_to(r.sigma, 4)},
                {"source",
                 "calibration/profiles/routing.json: the lognormal dispersion sigma of the "
                 "experts' per-layer popularity of a router pretrained with global-batch "
                 "balance (workload::TrainedRouting::global_batch); " +
                     b}}}}}}},
          {"fits", J::array({{{"parameter", "routing.global_batch_sigma"},
                              {"value", round_to(r.sigma, 4)},
                              {"points", r.pairs.size()}}})},
          {"mean_abs_error_pct", round_to(r.mean_abs_error_pct, 2)},
          {"loo_mean_abs_error_pct", round_to(r.loo_mean_abs_error_pct, 2)},
          {"statistic_mean_abs_error_pct", round_to(r.statistic_mean_abs_error_pct, 2)},
          {"pairs", pair_rows(r)}};
}

}  // namespace moesim::reports
