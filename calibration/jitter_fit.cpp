#include "calibration/jitter_fit.hpp"

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>
#include "sim_core/extreme_values.hpp"

namespace moesim::calibration {
namespace {

using sim_core::kNormalQ95;

// Non-negative least squares in two unknowns y ~ x0 u + x1 v: the free solution, or with
// one unknown held at 0 (the better of the two) when it has a negative part.
Eigen::Vector2d nonneg_lsq(const Eigen::MatrixXd& A, const Eigen::VectorXd& y) {
  Eigen::Vector2d x = A.colPivHouseholderQr().solve(y);
  if (x(0) >= 0 && x(1) >= 0) return x;
  Eigen::Vector2d best = Eigen::Vector2d::Zero();
  double best_r = y.squaredNorm();
  for (int keep = 0; keep < 2; ++keep) {
    const double den = A.col(keep).squaredNorm();
    if (den <= 0) continue;
    Eigen::Vector2d c = Eigen::Vector2d::Zero();
    c(keep) = std::max(0.0, A.col(keep).dot(y) / den);
    const double r = (A * c - y).squaredNorm();
    if (r < best_r) best = c, best_r = r;
  }
  return best;
}

// H_N2 - H_N1: how much later the latest of the pair's processes is, per unit mean delay.
double harmonic_step(const JitterPair& q) {
  return sim_core::harmonic_number(q.gpus_to) - sim_core::harmonic_number(q.gpus_from);
}

// A point's or a pair's label: its system, what it is, and whether it is fitted.
template <class Row>
void read_label(const nlohmann::json& p, Row& r) {
  r.system = p.at("system").get<std::string>();
  r.what = p.value("what", "");
  r.role = p.value("role", "fit");
}

void append(Eigen::MatrixXd& A, Eigen::VectorXd& y, double u, double v, double target) {
  A.conservativeResize(A.rows() + 1, 2);
  y.conservativeResize(y.size() + 1);
  A.row(A.rows() - 1) << u, v;
  y(y.size() - 1) = target;
}

}  // namespace

double exponential_max_spread(double n) {
  // log1p/expm1 keep q^(1/N) accurate for N in the thousands.
  const auto tail = [n](double q) { return std::log(-std::expm1(std::log(q) / n)); };
  return tail(0.5) - tail(0.95);
}

JitterFit read_step_jitter(const nlohmann::json& m) {
  if (!m.contains("points") || !m["points"].is_array())
    throw std::invalid_argument("step-jitter measurements: expected a list of points");
  if (!m.contains("pairs") || !m["pairs"].is_array())
    throw std::invalid_argument("step-jitter measurements: expected a list of weak-scaling pairs");
  JitterFit out;
  for (const auto& p : m["points"]) {
    JitterRow r;
    read_label(p, r);
    r.gpus = p.at("gpus").get<double>();
    r.median_s = p.at("median_s").get<double>();
    r.measured_spread_s = p.at("p95_s").get<double>() - r.median_s;
    if (!(r.gpus >= 1) || !(r.median_s > 0) || !(r.measured_spread_s >= 0))
      throw std::invalid_argument(
          "step-jitter measurements: a point needs gpus >= 1, a positive median and p95 >= median");
    out.rows.push_back(r);
  }
  for (const auto& p : m["pairs"]) {
    JitterPair q;
    read_label(p, q);
    q.gpus_from = p.at("gpus_from").get<double>();
    q.gpus_to = p.at("gpus_to").get<double>();
    q.step_from_s = p.at("step_from_s").get<double>();
    q.step_to_s = p.at("step_to_s").get<double>();
    if (p.contains("scenarios")) q.scenarios = p.at("scenarios").get<std::vector<std::string>>();
    if (!q.scenarios.empty() && q.scenarios.size() != 2)
      throw std::invalid_argument(
          "step-jitter measurements: a pair's scenarios are its two sizes' files");
    if (!(q.gpus_from >= 1) || !(q.gpus_to > q.gpus_from) || !(q.step_from_s > 0) ||
        !(q.step_to_s > 0))
      throw std::invalid_argument(
          "step-jitter measurements: a pair needs 1 <= gpus_from < gpus_to and positive steps");
    out.pairs.push_back(q);
  }
  return out;
}

JitterFit fit_step_jitter(JitterFit out) {
  // 1. The per-process delay from the pairs, each row over its mean step T (seeds differ
  // by a share of the step, not by a fixed time):
  //   (increase - simulated) / T = a (H_N2 - H_N1) / T.
  double uy = 0, uu = 0;
  out.fit_pairs = 0;
  for (const auto& q : out.pairs) {
    if (q.role != "fit") continue;
    const double t = 0.5 * (q.step_from_s + q.step_to_s);
    const double u = harmonic_step(q) / t;
    uy += u * (q.step_to_s - q.step_from_s - q.simulated_increase_s) / t;
    uu += u * u;
    ++out.fit_pairs;
  }
  if (out.fit_pairs < 2)
    throw std::invalid_argument("step-jitter measurements: need at least two fit pairs");
  out.jitter_s = std::max(0.0, uy / uu);

  // 2. The common delay from what the spread leaves.
  Eigen::MatrixXd B(0, 2);
  Eigen::VectorXd z(0);
  for (const auto& r : out.rows) {
    if (r.role != "fit") continue;
    const double own = out.jitter_s * exponential_max_spread(r.gpus);
    append(B, z, 1, r.median_s,
           std::sqrt(std::max(0.0, r.measured_spread_s * r.measured_spread_s - own * own)) /
               kNormalQ95);
  }
  out.fit_points = static_cast<int>(B.rows());
  if (out.fit_points < 2)
    throw std::invalid_argument("step-jitter measurements: need at least two fit points");
  const Eigen::Vector2d c = nonneg_lsq(B, z);
  out.common_s = c(0);
  out.common_fraction = c(1);

  double sq = 0, sq_pairs = 0;
  for (auto& r : out.rows) {
    const double own = out.jitter_s * exponential_max_spread(r.gpus);
    const double common = kNormalQ95 * (out.common_s + out.common_fraction * r.median_s);
    r.model_spread_s = std::hypot(own, common);
    if (r.role == "fit")
      sq += (r.model_spread_s - r.measured_spread_s) * (r.model_spread_s - r.measured_spread_s);
  }
  for (auto& q : out.pairs) {
    q.model_increase_s = out.jitter_s * harmonic_step(q);
    const double e = q.model_increase_s - (q.step_to_s - q.step_from_s - q.simulated_increase_s);
    if (q.role == "fit") sq_pairs += e * e;
  }
  out.rms_error_s = std::sqrt(sq / out.fit_points);
  out.pair_rms_error_s = std::sqrt(sq_pairs / out.fit_pairs);
  return out;
}

nlohmann::ordered_json jitter_profile_json(const JitterFit& f, const std::string& file,
                                           const std::string& date) {
  const std::string measurements =
      "calibration/measurements/" + std::filesystem::path(file).filename().string();
  const std::string own = fmt::format(
      "fitted by calibration::fit_step_jitter (`moesim calibrate jitter`) to {}: the step's "
      "increase over {} "
      "weak-scaling pairs of MLPerf Training runs (same recipe and microbatches, more GPUs; "
      "docs/reference/scale-and-goodput.md sections 1 and 3) beyond the simulation's own increase "
      "(their "
      "scenarios/series/ files), "
      "as the latest of N exponential per-process delays (rms {:.1f} ms)",
      measurements, f.fit_pairs, f.pair_rms_error_s * 1e3);
  const std::string common = fmt::format(
      "fitted by calibration::fit_step_jitter (`moesim calibrate jitter`) to {}: p95 - median of "
      "{} MLPerf Training "
      "runs at 256-8,192 GPUs (docs/reference/scale-and-goodput.md section 1) beyond what the "
      "per-process delay "
      "explains, as a normal delay common to all processes (spread rms error {:.0f} ms)",
      measurements, f.fit_points, f.rms_error_s * 1e3);
  const auto leaf = [](double v, const std::string& what, const std::string& basis) {
    return nlohmann::ordered_json{{"value", std::round(v * 1e6) / 1e6},
                                  {"source", fmt::format("{}: {}", what, basis)}};
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : f.rows)
    rows.push_back({{"system", r.system},
                    {"gpus", static_cast<std::int64_t>(r.gpus)},
                    {"role", r.role},
                    {"measured_spread_ms", std::round(r.measured_spread_s * 1e4) / 10},
                    {"model_spread_ms", std::round(r.model_spread_s * 1e4) / 10},
                    {"what", r.what}});
  nlohmann::ordered_json pairs = nlohmann::ordered_json::array();
  for (const auto& q : f.pairs)
    pairs.push_back(
        {{"system", q.system},
         {"gpus", {static_cast<std::int64_t>(q.gpus_from), static_cast<std::int64_t>(q.gpus_to)}},
         {"role", q.role},
         {"measured_increase_ms", std::round((q.step_to_s - q.step_from_s) * 1e4) / 10},
         {"simulated_increase_ms", std::round(q.simulated_increase_s * 1e4) / 10},
         {"model_increase_ms", std::round(q.model_increase_s * 1e4) / 10},
         {"what", q.what}});
  const auto fit = [](const char* name, double v, int n) {
    return nlohmann::ordered_json{
        {"parameter", name}, {"value", std::round(v * 1e6) / 1e6}, {"points", n}};
  };
  return {
      {"name", "step-jitter"},
      {"system", "all"},
      {"device",
       "every system preset: a training process's per-step delay, from per-step statistics at "
       "scale"},
      {"date", date},
      {"tool", "moesim calibrate jitter"},
      {"source", own + "; " + common},
      {"parameters",
       {{"variability",
         {{"jitter_s", leaf(f.jitter_s, "mean per-process step delay, absolute part", own)},
          {"common_s",
           leaf(f.common_s, "sd of the step delay common to all processes, absolute part", common)},
          {"common_fraction",
           leaf(f.common_fraction,
                "sd of the step delay common to all processes, part proportional to the step",
                common)}}}}},
      {"measurements",
       nlohmann::ordered_json::array({std::filesystem::path(file).filename().string()})},
      {"fits",
       {fit("variability.jitter_s", f.jitter_s, f.fit_pairs),
        fit("variability.common_s", f.common_s, f.fit_points),
        fit("variability.common_fraction", f.common_fraction, f.fit_points)}},
      {"pairs", pairs},
      {"points", rows}};
}

}  // namespace moesim::calibration
