#include "predict/bands.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config/load.hpp"
#include "workload/model_config.hpp"

namespace moesim::predict {

namespace {

// [value / q_(k_hi), value / q_(k_lo)] over the residuals q (header); pool 0 under 2.
Band conformal(double value, std::vector<double> q, double level) {
  Band b;
  b.level = level;
  if (q.size() < 2) return b;
  std::sort(q.begin(), q.end());
  const double n = static_cast<double>(q.size());
  // (The small margins keep (n + 1) x 0.1 an integer where it is one: 0.2 / 2 is not 0.1.)
  const auto lo_k = std::max(1.0, std::floor((n + 1) * (1 - level) / 2 + 1e-9));
  const auto hi_k = std::min(n, std::ceil((n + 1) * (1 + level) / 2 - 1e-9));
  b.pool = static_cast<int>(q.size());
  b.lo = value / q[static_cast<std::size_t>(hi_k) - 1];
  b.hi = value / q[static_cast<std::size_t>(lo_k) - 1];
  return b;
}

const config::Json& corpus_profile() {
  return config::preset_parsed(config::PresetKind::profile, "corpus", "calibration profile");
}

}  // namespace

const std::vector<BandResidual>& corpus_residuals() {
  static const std::vector<BandResidual> pool = [] {
    std::vector<BandResidual> out;
    const auto& j = corpus_profile();
    if (j.contains("runs"))
      for (const auto& r : j["runs"])
        if (r.contains("step_ratio") && r.contains("gpu"))
          out.push_back({r.value("run", ""), r["gpu"].get<std::string>(), r.value("model", ""),
                         r["step_ratio"].get<double>()});
    return out;
  }();
  return pool;
}

const std::vector<double>& corpus_pair_residuals() {
  static const std::vector<double> pool = [] {
    std::vector<double> out;
    const auto& j = corpus_profile();
    if (j.contains("pairs"))
      for (const auto& p : j["pairs"])
        if (p.value("measured_ratio", 0.0) > 0 && p.value("loo_ratio", 0.0) > 0)
          out.push_back(p["loo_ratio"].get<double>() / p["measured_ratio"].get<double>());
    return out;
  }();
  return pool;
}

Band ratio_band(double ratio, const std::vector<double>& residuals, double level) {
  Band b = conformal(ratio, residuals, level);
  if (b.pool > 0)
    b.basis = fmt::format("the out-of-sample ratio errors of {} measured pairs", b.pool);
  return b;
}

Band step_band(double step_s, const std::string& gpu, const std::string& model,
               const std::vector<BandResidual>& pool, const std::string& skip, double level) {
  std::vector<double> of_model, on_gpu, all;
  const bool named = !model.empty() && model != workload::kUnnamedModel;
  for (const auto& r : pool) {
    if (!skip.empty() && r.name == skip) continue;
    all.push_back(r.step_ratio);
    if (r.gpu == gpu) on_gpu.push_back(r.step_ratio);
    if (named && r.model == model) of_model.push_back(r.step_ratio);
  }
  const bool by_model = static_cast<int>(of_model.size()) >= kBandModelMin;
  const bool by_gpu = !by_model && static_cast<int>(on_gpu.size()) >= kBandStratumMin;
  const std::vector<double>& q = by_model ? of_model : by_gpu ? on_gpu : all;
  Band b = conformal(step_s, q, level);
  if (b.pool == 0) return b;
  if (by_model) {
    // A model moesim misses one way says so: every one of its runs on the same side.
    const auto [lo, hi] = std::minmax_element(q.begin(), q.end());
    const std::string side =
        *hi < 1
            ? fmt::format(", every one's step predicted shorter than measured, by {:.0f}-{:.0f}%",
                          100 * (1 - *hi), 100 * (1 - *lo))
        : *lo > 1
            ? fmt::format(", every one's step predicted longer than measured, by {:.0f}-{:.0f}%",
                          100 * (*lo - 1), 100 * (*hi - 1))
            : std::string();
    b.basis = fmt::format("the out-of-sample errors of the {} measured runs of {}{}", q.size(),
                          model, side);
  } else if (by_gpu) {
    b.basis =
        fmt::format("the out-of-sample errors of the {} measured runs on {} (fewer than {} of {})",
                    q.size(), gpu, kBandModelMin, named ? model : "an unnamed model");
  } else {
    b.basis = fmt::format("the out-of-sample errors of all {} measured runs (fewer than {} on {})",
                          q.size(), kBandStratumMin, gpu);
  }
  return b;
}

Band corpus_step_band(double step_s, const std::string& gpu, const std::string& model) {
  return step_band(step_s, gpu, model, corpus_residuals());
}

BandCoverage band_coverage(const std::vector<BandResidual>& pool, double level) {
  BandCoverage c;
  for (const auto& r : pool) {
    // The run's prediction is T = q m for its measured step m: inside when m is in the band.
    const Band b = step_band(r.step_ratio, r.gpu, r.model, pool, r.name, level);
    if (b.pool == 0) continue;
    ++c.runs;
    c.inside += (b.lo <= 1 && 1 <= b.hi) ? 1 : 0;
  }
  return c;
}

BandCoverage ratio_band_coverage(const std::vector<double>& residuals, double level) {
  BandCoverage c;
  for (std::size_t i = 0; i < residuals.size(); ++i) {
    std::vector<double> others = residuals;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    const Band b = ratio_band(residuals[i], others, level);
    if (b.pool == 0) continue;
    ++c.runs;
    c.inside += (b.lo <= 1 && 1 <= b.hi) ? 1 : 0;
  }
  return c;
}

}  // namespace moesim::predict
