#include "reports/corpus.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "calibration/corpus_params.hpp"
#include "predict/bands.hpp"

namespace moesim::reports {
namespace {

// The pairs' ratios in sample and left out (rounded to 0.1 point for the profile).
// predict/bands.hpp's coverage of the runs' out-of-sample errors (as the profile rounds them).
predict::BandCoverage coverage(const predict::CorpusResult& r) {
  std::vector<predict::BandResidual> pool;
  for (const auto& row : r.rows)
    pool.push_back({row.name, row.gpu, row.model, std::round(row.step_ratio * 1e4) / 1e4});
  return predict::band_coverage(pool);
}

predict::BandCoverage pair_coverage(const predict::CorpusResult& r) {
  std::vector<double> e;
  for (const auto& p : r.pairs)
    e.push_back((std::round(p.loo_ratio * 1e4) / 1e4) / (std::round(p.measured_ratio * 1e4) / 1e4));
  return predict::ratio_band_coverage(e);
}

nlohmann::ordered_json pairs_json(const predict::CorpusResult& r, bool rounded) {
  const auto round = [&](double v, double to) { return rounded ? std::round(v * to) / to : v; };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& p : r.pairs)
    out.push_back({{"name", p.name},
                   {"decision", p.decision},
                   {"fitted_runs", p.fitted_runs},
                   {"measured_ratio", round(p.measured_ratio, 1e4)},
                   {"in_sample_ratio", round(p.in_sample_ratio, 1e4)},
                   {"loo_ratio", round(p.loo_ratio, 1e4)},
                   {"in_sample_error_pct", round(p.in_sample_error_pct, 10)},
                   {"loo_error_pct", round(p.loo_error_pct, 10)},
                   {"loo_direction_right", p.loo_direction_right}});
  return out;
}

}  // namespace

std::string corpus_text(const predict::CorpusResult& r) {
  const auto table = calibration::corpus_params();
  std::string s = "fitted cross-run parameters:\n";
  for (std::size_t j = 0; j < table.size(); ++j)
    s += fmt::format("  {:<72} {:>8.4f}\n", table[j].label(), r.values[j]);
  s += fmt::format("\n{:<44} {:>14} {:>10} {:>10}\n", "run", "metric", "in-sample", "left out");
  for (const auto& row : r.rows)
    s += fmt::format("{:<44} {:>14} {:>+9.1f}% {:>+9.1f}%{}\n", row.name, row.metric,
                     row.in_sample_pct, row.loo_pct,
                     !row.held_out.empty() ? "  (held out, not fitted: " + row.held_out + ")"
                     : row.in_sample_only  ? "  (in-sample data: outside the leave-one-out mean)"
                                           : "");
  s += fmt::format(
      "\n{} runs fitted: mean absolute error in-sample {:.2f}%, leave-one-out {:.2f}% over {} runs",
      r.fitted_runs, r.mape_in, r.loo_mape, r.loo_runs);
  if (r.rows.size() > static_cast<std::size_t>(r.fitted_runs))
    s += fmt::format("; {} held out", r.rows.size() - static_cast<std::size_t>(r.fitted_runs));
  s += "\n";
  if (!r.pairs.empty()) {
    // The pairs the fit saw a run of: their ratios out of sample (the others have nothing
    // fitted to them: their ratio is the same either way).
    s += fmt::format("\n{:<76} {:>9} {:>10} {:>10}\n", "pair with a fitted run (decision)",
                     "measured", "in-sample", "left out");
    for (const auto& p : r.pairs)
      if (p.fitted_runs > 0)
        s += fmt::format("{:<76} {:>9.3f} {:>+9.1f}% {:>+9.1f}%{}\n",
                         fmt::format("{} ({})", p.name.substr(0, 62), p.decision), p.measured_ratio,
                         p.in_sample_error_pct, p.loo_error_pct,
                         p.loo_direction_right ? "" : "  wrong direction");
    s += fmt::format(
        "{} pairs ({} with a fitted run): mean absolute ratio error in-sample {:.2f}%, leave-out "
        "{:.2f}%; "
        "{} wrong directions left out\n",
        r.pairs.size(), r.pairs_with_fitted_runs, r.pairs_mae_in, r.pairs_mae_loo,
        r.pairs_wrong_direction_loo);
  }
  const auto c = coverage(r), cp = pair_coverage(r);
  s += fmt::format(
      "{:.0f}% bands (predict/bands.hpp): {} of {} runs inside the band of the others' "
      "out-of-sample "
      "errors ({:.1f}%); {} of {} pairs inside theirs ({:.1f}%)\n",
      100 * predict::kBandLevel, c.inside, c.runs, c.pct(), cp.inside, cp.runs, cp.pct());
  s += fmt::format("{} corpus evaluations in {:.1f} s\n", r.evaluations, r.wall_s);
  return s;
}

nlohmann::ordered_json corpus_json(const predict::CorpusResult& r) {
  const auto table = calibration::corpus_params();
  using J = nlohmann::ordered_json;
  J params = J::object();
  for (std::size_t j = 0; j < table.size(); ++j) params[table[j].label()] = r.values[j];
  J rows = J::array();
  for (const auto& row : r.rows)
    rows.push_back(
        {{"name", row.name},
         {"file", row.file},
         {"system", row.system},
         {"metric", row.metric},
         {"measured", row.measured},
         {"in_sample_pct", row.in_sample_pct},
         {"loo_pct", row.loo_pct},
         {"outside_loo_mean", row.in_sample_only || !row.held_out.empty()},
         {"held_out", row.held_out.empty() ? nlohmann::ordered_json(nullptr) : J(row.held_out)}});
  return {{"parameters", params},
          {"rows", rows},
          {"mape", r.mape_in},
          {"loo_mape", r.loo_mape},
          {"loo_runs", r.loo_runs},
          {"pairs", pairs_json(r, false)},
          {"pairs_mae_pct", r.pairs_mae_in},
          {"pairs_loo_mae_pct", r.pairs_mae_loo},
          {"pairs_wrong_direction_loo", r.pairs_wrong_direction_loo},
          {"band_coverage_pct", coverage(r).pct()},
          {"pair_band_coverage_pct", pair_coverage(r).pct()},
          {"evaluations", r.evaluations},
          {"wall_s", r.wall_s}};
}

nlohmann::ordered_json corpus_profile(const predict::CorpusResult& r, const std::string& date) {
  const auto table = calibration::corpus_params();
  using J = nlohmann::ordered_json;
  J params = J::object(), by_gpu = J::object();
  const std::string basis = fmt::format(
      "fitted by `moesim calibrate corpus` over {} measured runs (Huber loss of the log errors; "
      "in-sample MAPE {:.2f}%, leave-one-out {:.2f}% over {} runs)",
      r.fitted_runs, r.mape_in, r.loo_mape, r.loo_runs);
  for (std::size_t j = 0; j < table.size(); ++j) {
    // The parameter's path in a system preset ("efficiency.gemm.fp4") as a JSON pointer.
    std::string name(table[j].name);
    std::replace(name.begin(), name.end(), '.', '/');
    const J::json_pointer at("/" + name);
    const J leaf = {
        {"value", std::round(r.values[j] * 1e4) / 1e4},
        {"source",
         fmt::format("calibration/profiles/corpus.json: {}{}; {}", table[j].help,
                     table[j].gpus.empty() ? "" : fmt::format(" ({})", table[j].gpus), basis)}};
    if (table[j].gpus.empty()) {
      params[at] = leaf;
      continue;
    }
    for (const auto gpu : calibration::gpu_names(table[j].gpus))
      by_gpu[std::string(gpu)][at] = leaf;
  }
  J fits = J::array();
  for (std::size_t j = 0; j < table.size(); ++j)
    fits.push_back({{"parameter", table[j].label()},
                    {"value", std::round(r.values[j] * 1e4) / 1e4},
                    {"points", r.points.empty() ? 0 : r.points[j]},
                    {"cpus", r.cpus.size() > j ? J(r.cpus[j]) : J::array()}});
  J rows = J::array();
  for (const auto& row : r.rows)
    rows.push_back({{"run", row.name},
                    {"file", row.file},
                    {"gpu", row.gpu},
                    {"model", row.model},
                    {"step_ratio", std::round(row.step_ratio * 1e4) / 1e4},
                    {"in_sample_pct", std::round(row.in_sample_pct * 10) / 10},
                    {"loo_pct", std::round(row.loo_pct * 10) / 10},
                    {"outside_loo_mean", row.in_sample_only || !row.held_out.empty()},
                    {"held_out", row.held_out.empty() ? J(nullptr) : J(row.held_out)}});
  return {{"name", "corpus"},
          {"system", "all"},
          {"device", "every system preset: cross-run quantities fitted over the measured runs"},
          {"date", date},
          {"tool", "moesim calibrate corpus"},
          {"source", basis},
          {"parameters", params},
          {"parameters_by_gpu", by_gpu},
          {"fits", fits},
          {"runs", rows},
          {"mape_pct", std::round(r.mape_in * 100) / 100},
          {"loo_mape_pct", std::round(r.loo_mape * 100) / 100},
          {"pairs", pairs_json(r, true)},
          {"pairs_mae_pct", std::round(r.pairs_mae_in * 100) / 100},
          {"pairs_loo_mae_pct", std::round(r.pairs_mae_loo * 100) / 100},
          {"pairs_wrong_direction_loo", r.pairs_wrong_direction_loo},
          {"band_coverage_pct", std::round(coverage(r).pct() * 10) / 10},
          {"pair_band_coverage_pct", std::round(pair_coverage(r).pct() * 10) / 10}};
}

}  // namespace moesim::reports
