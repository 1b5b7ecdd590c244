// reports/report_diff.cpp: the page of two predictions (reports/report.hpp, diff_report): their
// breakdowns side by side and the step-time difference by contribution (reports/diff.hpp).
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "reports/report_charts.hpp"
#include "reports/run.hpp"

namespace moesim::reports {

using namespace charts;  // what the pages share (reports/report_charts.hpp)

HtmlPage diff_report(const DiffSide& a, const DiffSide& b) {
  const Json d = diff_json(a, b);
  const Json ja = run_json(a.scenario, a.prediction), jb = run_json(b.scenario, b.prediction);
  HtmlPage page;
  page.title = fmt::format("moesim report: {} vs {}", a.scenario.name, b.scenario.name);
  page.subtitle = "A is the reference, B the what-if.";
  const double ta = a.prediction.step.step_time_s, tb = b.prediction.step.step_time_s;
  page.facts = {{"A", fmt::format("{} ({})", a.scenario.name, a.scenario.file)},
                {"B", fmt::format("{} ({})", b.scenario.name, b.scenario.file)},
                {"step time", fmt::format("{:.3f} s -> {:.3f} s ({:+.3f} s, {:+.1f}%)", ta, tb,
                                          tb - ta, ta > 0 ? 100 * (tb - ta) / ta : 0.0)},
                {"TFLOPS/GPU", fmt::format("{:.1f} -> {:.1f}", a.prediction.tflops_per_gpu,
                                           b.prediction.tflops_per_gpu)},
                {"tokens/s/GPU", fmt::format("{:.1f} -> {:.1f}", a.prediction.tokens_per_s_per_gpu,
                                             b.prediction.tokens_per_s_per_gpu)},
                {"GPU-time per token",
                 fmt::format("{:.2f} -> {:.2f} us", predict::gpu_us_per_token(a.prediction),
                             predict::gpu_us_per_token(b.prediction))},
                {"peak memory", fmt::format("{:.1f} -> {:.1f} GiB", a.prediction.peak_memory_gib,
                                            b.prediction.peak_memory_gib)},
                {"settings that differ", std::to_string(d["settings_changed"].size())}};
  std::string changed;
  for (const auto& s : d["settings_changed"]) {
    if (changed.size() > 400) {
      changed += "; ...";
      break;
    }
    changed += fmt::format("{}{}: {} -> {}", changed.empty() ? "" : "; ",
                           s["path"].get<std::string>(), s["a"].dump(), s["b"].dump());
  }
  if (!changed.empty()) page.facts.emplace_back("changed", changed);
  const DiffCaveats caveats = diff_caveats(a, b);  // groups() points into it
  for (const auto& [whose, list] : caveats.groups())
    for (const auto& c : *list) page.facts.emplace_back(fmt::format("caveat {}", whose), c);

  page.charts.push_back(breakdown_chart(
      {{"A: " + a.scenario.name, ja["breakdown"]}, {"B: " + b.scenario.name, jb["breakdown"]}},
      "Breakdowns side by side",
      fmt::format("Each side's critical rank (A: rank {}, B: rank {}), its step split as run "
                  "--json's breakdown.",
                  a.prediction.step.critical_rank, b.prediction.step.critical_rank)));

  // Contributions largest first, as diff_json orders them, on its basis (seconds of the
  // step, or GPU-microseconds per token where the sides' tokens per GPU per step differ);
  // terms below 0.1% of the larger side summed into one bar, as `moesim diff` prints them.
  const bool tok = d["basis"] == "gpu_time_per_token";
  const char* unit = tok ? "us" : "s";
  const std::string k_a = tok ? "a_us_per_token" : "a_s", k_b = tok ? "b_us_per_token" : "b_s",
                    k_delta = tok ? "delta_us_per_token" : "delta_s";
  const double side_a = tok ? predict::gpu_us_per_token(a.prediction) : ta,
               side_b = tok ? predict::gpu_us_per_token(b.prediction) : tb;
  if (tok)
    page.facts.emplace_back(
        "basis",
        "A and B process different tokens per GPU per step, so the difference is "
        "split per token (each term x GPUs / tokens), not by step time");
  const double small = 1e-3 * std::max(side_a, side_b);
  Json values = Json::array();
  std::vector<std::string> terms;
  double rest = 0;
  int rest_n = 0;
  for (const auto& c : d["contributions"]) {
    const double delta = c[k_delta].get<double>();
    if (std::abs(delta) < small) {
      rest += delta;
      ++rest_n;
      continue;
    }
    const std::string item = c["item"].get<std::string>();
    const std::string term = c["category"].get<std::string>() + (item.empty() ? "" : " / " + item);
    terms.push_back(term);
    values.push_back({{"term", term},
                      {"delta", delta},
                      {"a", c[k_a].get<double>()},
                      {"b", c[k_b].get<double>()},
                      {"effect", delta > 0 ? "adds time in B" : "saves time in B"}});
  }
  if (rest_n) {
    terms.push_back(fmt::format("{} smaller terms", rest_n));
    values.push_back({{"term", terms.back()},
                      {"delta", rest},
                      {"a", nullptr},
                      {"b", nullptr},
                      {"effect", rest > 0 ? "adds time in B" : "saves time in B"}});
  }
  Json spec =
      delta_bars_spec(std::move(values), terms,
                      tok ? "B - A, GPU-microseconds per token" : "B - A, seconds of the step",
                      "adds time in B", "saves time in B", tok ? "us/token" : "s", unit);
  page.charts.push_back(
      {tok ? "Per-token difference by contribution" : "Step-time difference by contribution",
       fmt::format("B - A = {:+.3f} {}{}, split into the critical ranks' breakdown terms (compute "
                   "per module, "
                   "exposed communication per kind, host-bound idle per module, the schedule's "
                   "bubble, stage "
                   "imbalance, other), largest first; they add up to the difference (residual "
                   "{:.2g} {}). Diff "
                   "--json: contributions.",
                   side_b - side_a, unit, tok ? " of GPU-time per token" : "",
                   d[tok ? "residual_us_per_token" : "residual_s"].get<double>(), unit),
       spec});
  return page;
}

}  // namespace moesim::reports
