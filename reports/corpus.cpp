#include "reports/corpus.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "calibration/corpus_fit.hpp"
#include "predict/parallel.hpp"
#include "reports/run.hpp"

namespace moesim::reports {
namespace {

hw_models::Param fitted(double x) { return {x, "moesim calibrate corpus (being fitted)"}; }

// Ranges: physical bounds, not fitting aids. A loaded process is no faster than the op
// loop and not 10x slower (the bound was 5x while kernels launched inside a library call
// were priced as whole API calls; priced at the driver's launch, more of the loaded
// process's cost falls to this factor and the x86 fit reached 5.6, so the range was
// widened, not the value chosen); unbinding NUMA costs at most 5x (DeepSeek-scale Grace hosts);
// tuning makes DeepEP no slower and at most 3x faster; sustained clocks sit between
// half and all of the benchmarks' (B200: 0.868 under back-to-back attention,
// docs/research/blackwell-kernels.md 4).
void set_clock(hw_models::SystemSpec& s, double x) { s.efficiency.sustained_clock_factor = fitted(x); }
// One load factor per host CPU: the x86 hosts of the HGX/DGX systems (Xeon / EPYC) and the
// Grace CPUs of the NVL72 racks differ in caches, memory and core design, so a large
// process's slowdown over an op loop need not be the same on both.
void set_load(hw_models::SystemSpec& s, double x) { s.host.load_factor = fitted(x); }
constexpr const char* kLoadHelp =
    "host costs of a loaded training process over the op-loop microbenchmarks, per host CPU (x86 or Grace)";
constexpr const char* kClockHelp =
    "Tensor Core throughput under a training step's sustained load over the short benchmarks'";

constexpr std::array<CorpusParamInfo, 8> kParams{{
    {"host.load_factor", kLoadHelp, 1.5, 1.0, 10.0, set_load, "H100 SXM|H800 SXM|H200 SXM|H20|B200 (HGX)"},
    {"host.load_factor", kLoadHelp, 1.5, 1.0, 10.0, set_load, "GB200|GB300"},
    {"host.numa_unbound_factor", "host costs without NUMA binding over bound (stack.cpu_numa_binding off)", 2.0,
     1.0, 5.0, [](hw_models::SystemSpec& s, double x) { s.host.numa_unbound_factor = fitted(x); }},
    {"ep_dispatch.deepep_tuned_factor",
     "DeepEP's bandwidth once NVIDIA tuned its NVL72 kernels, over the library's fitted pre-tuning GB200 rates "
     "(stack.deepep_tuned)",
     1.2, 1.0, 3.0, [](hw_models::SystemSpec& s, double x) { s.ep_dispatch.deepep_tuned_factor = fitted(x); },
     "GB200|GB300"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "H100 SXM|H800 SXM|H200 SXM"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "B200 (HGX)"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "GB200"},
    {"efficiency.sustained_clock_factor", kClockHelp, 0.9, 0.5, 1.0, set_clock, "GB300"},
}};

double mean_abs(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::abs(x);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double pct(double log_ratio) { return 100 * (std::exp(log_ratio) - 1); }

}  // namespace

std::span<const CorpusParamInfo> corpus_params() { return kParams; }

// The GPU names of a '|'-separated list.
std::vector<std::string_view> gpu_names(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    const auto bar = list.find('|');
    out.push_back(list.substr(0, bar));
    if (bar == std::string_view::npos) break;
    list.remove_prefix(bar + 1);
  }
  return out;
}

bool CorpusParamInfo::applies_to(const hw_models::SystemSpec& s) const {
  if (gpus.empty()) return true;
  const auto names = gpu_names(gpus);
  return std::find(names.begin(), names.end(), s.gpu.name) != names.end();
}

// "efficiency.sustained_clock_factor [GB200]": a parameter's name with its GPUs.
std::string label(const CorpusParamInfo& p) {
  return p.gpus.empty() ? std::string(p.name) : fmt::format("{} [{}]", p.name, p.gpus);
}

CorpusResult calibrate_corpus(const std::vector<config::Scenario>& runs, int jobs) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<calibration::CorpusParam> params;
  for (const auto& p : kParams) params.push_back({std::string(p.name), p.initial, p.lo, p.hi});
  const calibration::CorpusEval eval = [&](const std::vector<std::vector<double>>& thetas,
                                           const std::vector<std::size_t>& which) {
    std::vector<double> r(which.size());
    predict::run_parallel(which.size(), jobs, [&](std::size_t i) {
      config::Scenario sc = runs[which[i]];
      for (std::size_t j = 0; j < kParams.size(); ++j)
        if (kParams[j].applies_to(sc.system)) kParams[j].set(sc.system, thetas[i][j]);
      r[i] = std::log(predict::predicted_metric(*sc.measured, predict::predict(sc)) / sc.measured->value);
    });
    return r;
  };
  const auto fit = calibration::fit_corpus(params, runs.size(), eval);
  CorpusResult out;
  out.values = fit.theta;
  out.points = fit.points;
  out.evaluations = fit.evaluations;
  std::vector<double> in, loo;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& sc = runs[i];
    CorpusRow row{sc.name, sc.file, sc.system.name,
                  std::string(config::measured_metric_names().name(sc.measured->metric)),
                  !sc.measured->in_sample.empty(), sc.measured->value, pct(fit.in_sample[i]),
                  pct(fit.leave_one_out[i])};
    in.push_back(row.in_sample_pct);
    if (!row.in_sample_only) loo.push_back(row.loo_pct);
    out.rows.push_back(std::move(row));
  }
  out.mape_in = mean_abs(in);
  out.loo_mape = mean_abs(loo);
  out.loo_runs = static_cast<int>(loo.size());
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::string corpus_text(const CorpusResult& r) {
  std::string s = "fitted cross-run parameters:\n";
  for (std::size_t j = 0; j < kParams.size(); ++j)
    s += fmt::format("  {:<72} {:>8.4f}\n", label(kParams[j]), r.values[j]);
  s += fmt::format("\n{:<44} {:>14} {:>10} {:>10}\n", "run", "metric", "in-sample", "left out");
  for (const auto& row : r.rows)
    s += fmt::format("{:<44} {:>14} {:>+9.1f}% {:>+9.1f}%{}\n", row.name, row.metric, row.in_sample_pct, row.loo_pct,
                     row.in_sample_only ? "  (in-sample data: outside the leave-one-out mean)" : "");
  s += fmt::format("\n{} runs: mean absolute error in-sample {:.2f}%, leave-one-out {:.2f}% over {} runs\n",
                   r.rows.size(), r.mape_in, r.loo_mape, r.loo_runs);
  s += fmt::format("{} corpus evaluations in {:.1f} s\n", r.evaluations, r.wall_s);
  return s;
}

nlohmann::ordered_json corpus_json(const CorpusResult& r) {
  using J = nlohmann::ordered_json;
  J params = J::object();
  for (std::size_t j = 0; j < kParams.size(); ++j) params[label(kParams[j])] = r.values[j];
  J rows = J::array();
  for (const auto& row : r.rows)
    rows.push_back({{"name", row.name}, {"file", row.file}, {"system", row.system}, {"metric", row.metric},
                    {"measured", row.measured}, {"in_sample_pct", row.in_sample_pct}, {"loo_pct", row.loo_pct},
                    {"outside_loo_mean", row.in_sample_only}});
  return {{"parameters", params}, {"rows", rows},       {"mape", r.mape_in},
          {"loo_mape", r.loo_mape}, {"loo_runs", r.loo_runs}, {"evaluations", r.evaluations},
          {"wall_s", r.wall_s}};
}

nlohmann::ordered_json corpus_profile(const CorpusResult& r, const std::string& date) {
  using J = nlohmann::ordered_json;
  J params = J::object(), by_gpu = J::object();
  const std::string basis =
      fmt::format("fitted by `moesim calibrate corpus` over {} measured runs (Huber loss of the log errors; "
                  "in-sample MAPE {:.2f}%, leave-one-out {:.2f}% over {} runs)",
                  r.rows.size(), r.mape_in, r.loo_mape, r.loo_runs);
  for (std::size_t j = 0; j < kParams.size(); ++j) {
    const std::string name(kParams[j].name);
    const auto dot = name.find('.');
    const J leaf = {{"value", std::round(r.values[j] * 1e4) / 1e4},
                    {"source", fmt::format("calibration/profiles/corpus.json: {}{}; {}", kParams[j].help,
                                           kParams[j].gpus.empty() ? "" : fmt::format(" ({})", kParams[j].gpus),
                                           basis)}};
    if (kParams[j].gpus.empty()) {
      params[name.substr(0, dot)][name.substr(dot + 1)] = leaf;
      continue;
    }
    for (const auto gpu : gpu_names(kParams[j].gpus))
      by_gpu[std::string(gpu)][name.substr(0, dot)][name.substr(dot + 1)] = leaf;
  }
  J fits = J::array();
  for (std::size_t j = 0; j < kParams.size(); ++j)
    fits.push_back({{"parameter", label(kParams[j])},
                    {"value", std::round(r.values[j] * 1e4) / 1e4},
                    {"points", r.points.empty() ? 0 : r.points[j]}});
  J rows = J::array();
  for (const auto& row : r.rows)
    rows.push_back({{"run", row.name},
                    {"file", row.file},
                    {"in_sample_pct", std::round(row.in_sample_pct * 10) / 10},
                    {"loo_pct", std::round(row.loo_pct * 10) / 10},
                    {"outside_loo_mean", row.in_sample_only}});
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
          {"loo_mape_pct", std::round(r.loo_mape * 100) / 100}};
}

}  // namespace moesim::reports
