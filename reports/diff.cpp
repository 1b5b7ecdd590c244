#include "reports/diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/caveats.hpp"
#include "predict/bands.hpp"
#include "reports/describe.hpp"
#include "reports/evidence.hpp"
#include "reports/run.hpp"

namespace moesim::reports {

using Json = nlohmann::ordered_json;

namespace {

// Headline figures of one side, in the order the text table prints them.
std::vector<std::pair<std::string, double>> figures(const predict::Prediction& p) {
  std::vector<std::pair<std::string, double>> f{
      {"step_time_s", p.step.step_time_s},
      {"tflops_per_gpu", p.tflops_per_gpu},
      {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
      {"tokens_per_gpu_per_step", predict::tokens_per_gpu_per_step(p)},
      {"gpu_us_per_token", predict::gpu_us_per_token(p)},
      {"mfu", p.mfu},
      {"peak_memory_gib", p.peak_memory_gib}};
  for (const auto& [name, gib] : p.peak_memory_parts.named())
    f.emplace_back(fmt::format("memory.{}_gib", name), gib);
  return f;
}

// A JSON document's leaves by JSON pointer, arrays kept whole (a list is one setting).
void leaves(const nlohmann::json& j, const std::string& at,
            std::map<std::string, nlohmann::json>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) leaves(v, at + "/" + k, out);
  } else {
    out[at] = j;
  }
}

// The resolved settings (describe --json, as JSON pointers) that differ, without the
// files' metadata.
std::vector<std::tuple<std::string, Json, Json>> changed_settings(const config::Scenario& a,
                                                                  const config::Scenario& b) {
  std::map<std::string, nlohmann::json> fa, fb;
  leaves(nlohmann::json(describe_json(a)), "", fa);
  leaves(nlohmann::json(describe_json(b)), "", fb);
  const auto metadata = [](const std::string& key) {
    for (const char* skip : {"/name", "/file", "/description", "/measured"})
      if (key.rfind(skip, 0) == 0) return true;
    return false;
  };
  std::vector<std::tuple<std::string, Json, Json>> out;
  for (const auto& [key, va] : fa) {
    if (metadata(key)) continue;
    const auto vb = fb.find(key);
    if (vb == fb.end())
      out.emplace_back(key, va, nullptr);
    else if (vb->second != va)
      out.emplace_back(key, va, vb->second);
  }
  for (const auto& [key, vb] : fb)
    if (!metadata(key) && !fa.contains(key)) out.emplace_back(key, nullptr, vb);
  return out;
}

// What the what-if corpus says about B's gain over A (config/decisions.hpp): the decisions
// behind the settings that differ, and B's per-GPU throughput over A's, in percent (the
// claim is assessed on its size: a loss is as much a claim as a gain).
std::pair<double, config::ClaimAssessment> what_backs(const DiffSide& a, const DiffSide& b) {
  std::vector<config::Decision> decisions;
  for (const auto& [key, va, vb] : changed_settings(a.scenario, b.scenario)) {
    std::string dotted = key.substr(1);
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    if (const auto d = config::decision_of_setting(dotted)) decisions.push_back(*d);
  }
  const double gain =
      100 * (b.prediction.tokens_per_s_per_gpu / a.prediction.tokens_per_s_per_gpu - 1);
  return {gain, config::assess_claim(std::abs(gain), decisions)};
}

std::string item_name(const predict::Contribution& c) {
  return c.item.empty() ? c.category : c.category + " / " + c.item;
}

// The band of B's per-GPU throughput over A's (predict/bands.hpp: the measured pairs'
// out-of-sample ratio errors).
predict::Band ratio_band_of(const DiffSide& a, const DiffSide& b) {
  const double ta = a.prediction.tokens_per_s_per_gpu, tb = b.prediction.tokens_per_s_per_gpu;
  return ta > 0 ? predict::ratio_band(tb / ta, predict::corpus_pair_residuals()) : predict::Band{};
}

}  // namespace

DiffCaveats diff_caveats(const DiffSide& a, const DiffSide& b) {
  const auto ca = config::prediction_caveats(a.scenario),
             cb = config::prediction_caveats(b.scenario);
  const auto in = [](const std::vector<std::string>& v, const std::string& c) {
    return std::find(v.begin(), v.end(), c) != v.end();
  };
  DiffCaveats out;
  for (const auto& c : ca) (in(cb, c) ? out.both : out.a_only).push_back(c);
  for (const auto& c : cb)
    if (!in(ca, c)) out.b_only.push_back(c);
  return out;
}

Json diff_json(const DiffSide& a, const DiffSide& b) {
  const predict::Difference d = predict::difference(a.prediction, b.prediction);
  const auto side = [](const DiffSide& s) {
    Json j{{"name", s.scenario.name}, {"file", s.scenario.file}};
    for (const auto& [k, v] : figures(s.prediction)) j[k] = v;
    j["fits_in_memory"] = s.prediction.fits_in_memory;
    j["critical_rank"] = s.prediction.step.critical_rank;
    if (Json bands = bands_json(s.scenario, s.prediction); !bands.is_null())
      j["bands"] = std::move(bands);
    if (const auto& set = s.scenario.system.set_on_command_line; !set.empty())
      j["system_set"] = set;
    j["caveats"] = config::prediction_caveats(s.scenario);  // as run --json's
    return j;
  };
  Json out{{"a", side(a)}, {"b", side(b)}};
  Json change = Json::object();
  const auto fa = figures(a.prediction), fb = figures(b.prediction);
  for (std::size_t i = 0; i < fa.size(); ++i) change[fa[i].first] = fb[i].second - fa[i].second;
  out["change"] = change;
  Json settings = Json::array();
  for (const auto& [key, va, vb] : changed_settings(a.scenario, b.scenario))
    settings.push_back({{"path", key}, {"a", va}, {"b", vb}});
  out["settings_changed"] = settings;
  const auto [gain, claim] = what_backs(a, b);
  out["evidence"] = claim_json(gain, claim);
  if (const auto band = ratio_band_of(a, b); band.pool > 0)
    out["ratio_band"] = {{"tokens_per_s_per_gpu_ratio", {band.lo, band.hi}},
                         {"level", band.level},
                         {"pairs", band.pool},
                         {"within", band.lo <= 1 && 1 <= band.hi},
                         {"basis", band.basis}};
  out["step_time_delta_s"] = d.step_time_b_s - d.step_time_a_s;
  // The basis the contributions are ordered by (predict/diff.hpp): per token when the
  // sides process different tokens per GPU per step.
  out["basis"] = d.per_token ? "gpu_time_per_token" : "step_time";
  out["gpu_us_per_token_delta"] = d.gpu_us_per_token_b - d.gpu_us_per_token_a;
  Json rows = Json::array();
  for (const auto& c : d.contributions)
    rows.push_back({{"category", c.category},
                    {"item", c.item},
                    {"a_s", c.a_s},
                    {"b_s", c.b_s},
                    {"delta_s", c.delta_s()},
                    {"a_us_per_token", c.a_us},
                    {"b_us_per_token", c.b_us},
                    {"delta_us_per_token", c.delta_us()}});
  out["contributions"] = rows;
  out["residual_s"] = d.residual_s;
  out["residual_us_per_token"] = d.residual_us;
  return out;
}

std::string diff_text(const DiffSide& a, const DiffSide& b) {
  const predict::Difference d = predict::difference(a.prediction, b.prediction);
  std::string o = fmt::format("A  {}  ({})\nB  {}  ({})\n\n", a.scenario.name, a.scenario.file,
                              b.scenario.name, b.scenario.file);
  // What the predictions are priced beyond (a --set what-if among them), as run lists it.
  const DiffCaveats caveats = diff_caveats(a, b);
  for (const auto& [whose, items] : caveats.groups())
    if (const auto block = caveats_text(*items, fmt::format("caveats {}", whose)); !block.empty())
      o += fmt::format("{}\n", block);
  // What differs first, in a line each (a long value cut: --json has it whole).
  const auto settings = changed_settings(a.scenario, b.scenario);
  const auto shown = [](const Json& v) {
    std::string t = v.dump();
    return t.size() <= 60 ? t : t.substr(0, 57) + "...";
  };
  o += fmt::format("settings that differ ({}):\n", settings.size());
  for (const auto& [key, va, vb] : settings)
    o += fmt::format("  {}: {} -> {}\n", key, shown(va), shown(vb));
  o += fmt::format("\n{:<26}{:>12}{:>12}{:>12}{:>9}\n", "", "A", "B", "B - A", "");
  const auto fa = figures(a.prediction), fb = figures(b.prediction);
  for (std::size_t i = 0; i < fa.size(); ++i) {
    const double x = fa[i].second, y = fb[i].second;
    if (x == 0 && y == 0) continue;
    o += fmt::format("{:<26}{:>12.4g}{:>12.4g}{:>+12.4g}{:>9}\n", fa[i].first, x, y, y - x,
                     x != 0 ? fmt::format("{:+.1f}%", 100 * (y - x) / x) : std::string());
  }
  if (a.prediction.fits_in_memory != b.prediction.fits_in_memory)
    o += fmt::format("fits in memory: A {}, B {}\n", a.prediction.fits_in_memory ? "yes" : "no",
                     b.prediction.fits_in_memory ? "yes" : "no");
  const auto [gain, claim] = what_backs(a, b);
  o += fmt::format("what the what-if corpus says about B's {:+.1f}% (tokens/s/GPU): {}\n", gain,
                   claim_text(claim));
  if (const auto band = ratio_band_of(a, b); band.pool > 0)
    o += fmt::format(
        "  the model's {:.0f}% band on B / A: {:.3f} - {:.3f} ({:+.1f}% to {:+.1f}%), from {}{}\n",
        100 * band.level, band.lo, band.hi, 100 * (band.lo - 1), 100 * (band.hi - 1), band.basis,
        band.lo <= 1 && 1 <= band.hi ? ": A and B are within each other's band" : "");
  // The contributions on the basis (predict/diff.hpp): seconds of the step, or
  // GPU-microseconds per token where the sides' tokens per GPU per step differ.
  const bool tok = d.per_token;
  const auto a_of = [&](const predict::Contribution& c) { return tok ? c.a_us : c.a_s; };
  const auto b_of = [&](const predict::Contribution& c) { return tok ? c.b_us : c.b_s; };
  const double ta = tok ? d.gpu_us_per_token_a : d.step_time_a_s,
               tb = tok ? d.gpu_us_per_token_b : d.step_time_b_s;
  const double delta = tb - ta;
  const char* unit = tok ? "us" : "s";
  if (tok) {
    o += fmt::format(
        "\nA and B process different tokens per GPU per step ({:.6g} and {:.6g}): their step times "
        "({:.3f} -> {:.3f} s) do not compare, so the difference is split per token.\n",
        d.tokens_per_gpu_a, d.tokens_per_gpu_b, d.step_time_a_s, d.step_time_b_s);
    o += fmt::format(
        "GPU-time per token {:.2f} -> {:.2f} us ({:+.2f} us, {:+.1f}%), by contribution (critical "
        "ranks "
        "{} and {}; each term x GPUs / tokens):\n",
        ta, tb, delta, ta > 0 ? 100 * delta / ta : 0.0, a.prediction.step.critical_rank,
        b.prediction.step.critical_rank);
  } else {
    o += fmt::format(
        "\nstep time {:.3f} -> {:.3f} s ({:+.3f} s), by contribution (critical ranks {} and {}):\n",
        ta, tb, delta, a.prediction.step.critical_rank, b.prediction.step.critical_rank);
  }
  o += fmt::format("  {:<40}{:>10}{:>10}{:>11}{:>8}\n", "", fmt::format("A {}", unit),
                   fmt::format("B {}", unit), fmt::format("B - A {}", unit), "share");
  // Terms below 0.1% of the larger side are summed on one line.
  const double small = 1e-3 * std::max(ta, tb);
  double rest = 0, sum = 0;
  int rest_n = 0;
  for (const auto& c : d.contributions) {
    const double x = b_of(c) - a_of(c);
    sum += x;
    if (std::abs(x) < small) {
      rest += x;
      ++rest_n;
      continue;
    }
    o += fmt::format("  {:<40}{:>10.3f}{:>10.3f}{:>+11.3f}{:>8}\n", item_name(c), a_of(c), b_of(c),
                     x, delta != 0 ? fmt::format("{:.0f}%", 100 * x / delta) : std::string());
  }
  if (rest_n)
    o += fmt::format("  {:<40}{:>20}{:>+11.3f}\n", fmt::format("{} smaller terms", rest_n), "",
                     rest);
  o += fmt::format("  {:<40}{:>20}{:>+11.3f}  ({} difference {:+.3f} {}, residual {:.2g} {})\n",
                   "sum of contributions", "", sum, tok ? "per-token" : "step-time", delta, unit,
                   tok ? d.residual_us : d.residual_s, unit);
  return o;
}

}  // namespace moesim::reports
