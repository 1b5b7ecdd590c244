#include "calibration/jitter_fit.hpp"

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <Eigen/Dense>
#include <fmt/format.h>

namespace moesim::calibration {

double exponential_max_spread(double n) {
  // log1p/expm1 keep q^(1/N) accurate for N in the thousands.
  const auto tail = [n](double q) { return std::log(-std::expm1(std::log(q) / n)); };
  return tail(0.5) - tail(0.95);
}

JitterFit fit_step_jitter(const nlohmann::json& m) {
  if (!m.contains("points") || !m["points"].is_array())
    throw std::invalid_argument("step-jitter measurements: expected a list of points");
  JitterFit out;
  for (const auto& p : m["points"]) {
    JitterRow r;
    r.system = p.at("system").get<std::string>();
    r.what = p.value("what", "");
    r.role = p.value("role", "fit");
    r.gpus = p.at("gpus").get<double>();
    r.median_s = p.at("median_s").get<double>();
    r.measured_spread_s = p.at("p95_s").get<double>() - r.median_s;
    if (!(r.gpus >= 1) || !(r.median_s > 0) || !(r.measured_spread_s >= 0))
      throw std::invalid_argument("step-jitter measurements: a point needs gpus >= 1, a positive median and p95 >= median");
    out.rows.push_back(r);
  }
  // p95 - median = (a + b T) k(N): linear least squares in (a, b).
  Eigen::MatrixXd A(0, 2);
  Eigen::VectorXd y(0);
  for (const auto& r : out.rows) {
    if (r.role != "fit") continue;
    const double k = exponential_max_spread(r.gpus);
    A.conservativeResize(A.rows() + 1, 2);
    y.conservativeResize(y.size() + 1);
    A.row(A.rows() - 1) << k, r.median_s * k;
    y(y.size() - 1) = r.measured_spread_s;
  }
  out.fit_points = static_cast<int>(A.rows());
  if (out.fit_points < 2) throw std::invalid_argument("step-jitter measurements: need at least two fit points");
  const Eigen::Vector2d x = A.colPivHouseholderQr().solve(y);
  out.jitter_s = x(0);
  out.jitter_fraction = x(1);
  double sq = 0;
  for (auto& r : out.rows) {
    r.model_spread_s = (out.jitter_s + out.jitter_fraction * r.median_s) * exponential_max_spread(r.gpus);
    if (r.role == "fit") sq += (r.model_spread_s - r.measured_spread_s) * (r.model_spread_s - r.measured_spread_s);
  }
  out.rms_error_s = std::sqrt(sq / out.fit_points);
  return out;
}

nlohmann::ordered_json jitter_profile_json(const JitterFit& f, const std::string& file, const std::string& date) {
  const std::string measurements = "calibration/measurements/" + std::filesystem::path(file).filename().string();
  const std::string basis = fmt::format(
      "fitted by calibration::fit_step_jitter (`moesim calibrate jitter`) to {}: p95 - median of {} MLPerf "
      "Training runs at 256-8,192 GPUs (shared/reference/scale-and-goodput.md section 1), the latest of N "
      "exponential per-process delays; rms error {:.0f} ms",
      measurements, f.fit_points, f.rms_error_s * 1e3);
  const auto leaf = [&](double v, const char* what) {
    return nlohmann::ordered_json{{"value", std::round(v * 1e6) / 1e6}, {"source", fmt::format("{}: {}", what, basis)}};
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : f.rows)
    rows.push_back({{"system", r.system},
                    {"gpus", static_cast<std::int64_t>(r.gpus)},
                    {"role", r.role},
                    {"measured_spread_ms", std::round(r.measured_spread_s * 1e4) / 10},
                    {"model_spread_ms", std::round(r.model_spread_s * 1e4) / 10},
                    {"what", r.what}});
  return {{"name", "step-jitter"},
          {"system", "all"},
          {"device", "every system preset: a training process's per-step delay, from per-step statistics at scale"},
          {"date", date},
          {"tool", "moesim calibrate jitter"},
          {"source", basis},
          {"parameters",
           {{"variability",
             {{"jitter_s", leaf(f.jitter_s, "mean per-process step delay, absolute part")},
              {"jitter_fraction", leaf(f.jitter_fraction, "mean per-process step delay, part proportional to the step")}}}}},
          {"measurements", nlohmann::ordered_json::array({std::filesystem::path(file).filename().string()})},
          {"fits",
           {{{"parameter", "variability.jitter_s"}, {"value", std::round(f.jitter_s * 1e6) / 1e6}, {"points", f.fit_points}},
            {{"parameter", "variability.jitter_fraction"},
             {"value", std::round(f.jitter_fraction * 1e6) / 1e6},
             {"points", f.fit_points}}}},
          {"points", rows}};
}

}  // namespace moesim::calibration
