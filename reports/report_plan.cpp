// reports/report_plan.cpp: the page of a plan (reports/report.hpp, plan_report): the facts
// of `moesim plan`'s summary (reports::plan_summary_json: the space, the candidates' fates,
// the top K, the scenario as given), where the candidates went, the top K's breakdowns
// beside the scenario as given, and each simulated candidate's objective against its
// bound (the bound is a best case: a point on its better side is a violation).
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "reports/report_charts.hpp"

namespace moesim::reports {

using namespace charts;  // what the pages share (reports/report_charts.hpp)

namespace {

// A row's settings in short ("mbs 1, tp 1, pp 4, ..., hybridep"): its values from the
// column after `gpus` up to `status`, each under its name's last part.
std::string settings_text(const Json& row) {
  std::string out;
  bool on = false;
  for (const auto& [key, value] : row.items()) {
    if (key == "status") break;
    if (key == "gpus") {
      on = true;
      continue;
    }
    if (!on || value.is_null()) continue;
    std::string name = key.substr(key.rfind('.') + 1);
    if (name == "micro_batch_size") name = "mbs";
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, text);
  }
  return out;
}

// The breakdown columns of a row ("breakdown.compute", ...) as run --json's "breakdown".
Json breakdown_of(const Json& row) {
  Json b = Json::object();
  for (const auto& [key, value] : row.items())
    if (key.rfind("breakdown.", 0) == 0 && value.is_number()) b[key.substr(10)] = value;
  return b;
}

}  // namespace

HtmlPage plan_report(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Json s = plan_summary_json(csv, info);
  const std::string obj = s["objective"].get<std::string>();
  const bool higher = config::higher_is_better(info.sweep.objective);
  const auto value_text = [](const Json& v) { return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : v.dump(); };

  HtmlPage page;
  page.title = fmt::format("moesim report: plan {}", info.sweep.name);
  page.subtitle = fmt::format("{} on {} GPUs: {} candidates, {} evaluated, {} simulated.", info.sweep.sweep_file,
                              info.gpus, info.sweep.combinations, info.sweep.rows, info.simulated);
  page.facts.emplace_back("objective", fmt::format("{} ({} is better)", obj, higher ? "higher" : "lower"));
  page.facts.emplace_back("space", fmt::format("{} layouts kept by the rules ({} expanded) x the settings {}",
                                               info.layouts, info.layouts_expanded,
                                               info.settings.empty() ? std::string("(none varied)")
                                                                     : fmt::format("{}", fmt::join(info.settings, ", "))));
  std::string fates;
  for (const auto& [fate, n] : s["fates"].items())
    fates += fmt::format("{}{} {}", fates.empty() ? "" : ", ", fate, n.get<std::int64_t>());
  page.facts.emplace_back("fates", fates);
  page.facts.emplace_back("wall time", fmt::format("{:.1f} s (bounds {:.1f} s, simulations {:.1f} s)", info.wall_s,
                                                   info.bound_wall_s, info.simulate_wall_s));
  std::vector<std::pair<std::string, Json>> runs;
  int rank = 0;
  for (const auto& row : s["top"]) {
    const std::string id = fmt::format("#{}", row["id"].get<std::int64_t>());
    page.facts.emplace_back(fmt::format("top {}", ++rank),
                            fmt::format("{} ({}): {} {}, step {} s, peak {} GiB", id, settings_text(row), obj,
                                        value_text(row[obj]), value_text(row["step_time_s"]),
                                        value_text(row["peak_memory_gib"])));
    runs.emplace_back(id, breakdown_of(row));
  }
  if (s.contains("given")) {
    const Json& g = s["given"];
    std::string text = fmt::format("{}: ", settings_text(g));
    if (g["status"] != "ok") {
      text += fmt::format("{} {}", g["status"].get<std::string>(), g["message"].get<std::string>());
    } else {
      text += fmt::format("{} {}", obj, value_text(g[obj]));
      if (g["rank"].is_number())
        text += fmt::format(", rank {}{}", g["rank_exact"].get<bool>() ? "" : "at least ", g["rank"].get<std::int64_t>());
      runs.emplace_back("as given", breakdown_of(g));
    }
    page.facts.emplace_back("the scenario as given", text);
  }
  if (!info.violations.empty())
    page.facts.emplace_back("bound violations", fmt::format("{} (simulated better than their bound)",
                                                            fmt::join(info.violations, ", ")));

  // Where the candidates went: counts by fate on a log scale (they span 1 to 10^5).
  Json fate_values = Json::array();
  for (const auto& [fate, n] : s["fates"].items())
    if (n.get<std::int64_t>() > 0) fate_values.push_back({{"fate", fate}, {"count", n}});
  Json fate_spec = vega_spec(R"json({
    "data": [{"name": "fates"}],
    "scales": [
      {"name": "x", "type": "band", "domain": {"data": "fates", "field": "fate"}, "range": "width", "padding": 0.2},
      {"name": "y", "type": "log", "domain": {"data": "fates", "field": "count"}, "domainMin": 1, "range": "height",
       "nice": true}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "fate"},
             {"orient": "left", "scale": "y", "title": "candidates", "grid": true, "format": "~s"}],
    "marks": [
      {"type": "rect", "from": {"data": "fates"}, "encode": {"enter": {
        "x": {"scale": "x", "field": "fate"}, "width": {"scale": "x", "band": 1},
        "y": {"scale": "y", "field": "count"}, "y2": {"scale": "y", "value": 1},
        "fill": {"value": "#4c78a8"},
        "tooltip": {"signal": "{'fate': datum.fate, 'candidates': datum.count}"}}}},
      {"type": "text", "from": {"data": "fates"}, "encode": {"enter": {
        "x": {"scale": "x", "field": "fate", "band": 0.5}, "y": {"scale": "y", "field": "count", "offset": -6},
        "align": {"value": "center"}, "fill": {"value": "#222"}, "text": {"field": "count"}}}}]
  })json",
                             640, 300);
  fate_spec["data"][0]["values"] = fate_values;
  page.charts.push_back(
      {"Where the candidates went",
       "Every candidate of the space by fate: rule (a layout rule drops its layout), invalid (the loader refuses "
       "it), memory (it does not fit), duplicate (a varied setting is inert there), dominated (a recompute rung "
       "that recomputes less fits), bound (its lower bound cannot beat the top K's last), simulated. Log scale.",
       fate_spec});

  if (!runs.empty())
    page.charts.push_back(breakdown_chart(
        runs, "The top candidates' steps",
        fmt::format("The critical rank's step of each of the top {} by {} (and of the scenario as given, when it "
                    "was simulated), by category; the facts above list each one's settings.",
                    s["top"].size(), obj)));

  // Each simulated candidate against its bound.
  const auto& h = csv.header;
  const auto col = static_cast<std::size_t>(std::find(h.begin(), h.end(), obj) - h.begin());
  std::map<std::int64_t, double> simulated;
  for (const auto& r : csv.rows)
    if (col < r.fields.size())
      if (const auto v = csv_number(r.fields[col])) simulated[r.id] = *v;
  std::map<std::int64_t, bool> top;
  for (const auto& row : s["top"]) top[row["id"].get<std::int64_t>()] = true;
  Json points = Json::array();
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const auto& [id, bound] : info.bounds) {
    const auto it = simulated.find(id);
    if (it == simulated.end() || !std::isfinite(bound)) continue;
    points.push_back({{"id", id}, {"bound", bound}, {"value", it->second}, {"top", top.count(id) ? "top" : "other"}});
    lo = std::min({lo, bound, it->second});
    hi = std::max({hi, bound, it->second});
  }
  if (!points.empty()) {
    Json spec = vega_spec(R"json({
      "data": [{"name": "points"}, {"name": "diagonal"}],
      "scales": [
        {"name": "x", "type": "linear", "range": "width", "nice": true, "zero": false},
        {"name": "y", "type": "linear", "range": "height", "nice": true, "zero": false},
        {"name": "top", "type": "ordinal", "domain": ["top", "other"], "range": ["#e45756", "#4c78a8"]}],
      "axes": [{"orient": "bottom", "scale": "x", "grid": true}, {"orient": "left", "scale": "y", "grid": true}],
      "legends": [{"fill": "top", "orient": "right", "title": "candidate"}],
      "marks": [
        {"type": "line", "from": {"data": "diagonal"}, "encode": {"enter": {
          "x": {"scale": "x", "field": "v"}, "y": {"scale": "y", "field": "v"},
          "stroke": {"value": "#888"}, "strokeDash": {"value": [4, 4]}}}},
        {"type": "symbol", "from": {"data": "points"}, "encode": {"enter": {
          "x": {"scale": "x", "field": "bound"}, "y": {"scale": "y", "field": "value"},
          "fill": {"scale": "top", "field": "top"}, "size": {"value": 60}, "fillOpacity": {"value": 0.8},
          "tooltip": {"signal": "{'id': datum.id, 'bound': format(datum.bound, '.4~g'), 'simulated': format(datum.value, '.4~g')}"}}}}]
    })json",
                          640, 400);
    spec["data"][0]["values"] = points;
    spec["data"][1]["values"] = Json::array({{{"v", lo}}, {{"v", hi}}});
    const Json domain = Json::array({lo, hi});
    spec["scales"][0]["domain"] = domain;
    spec["scales"][1]["domain"] = domain;
    spec["axes"][0]["title"] = fmt::format("{} at the bound (a best case)", obj);
    spec["axes"][1]["title"] = fmt::format("{} simulated", obj);
    page.charts.push_back(
        {"Simulated against the bound",
         fmt::format("Each simulated candidate's {} against its lower bound's (the objective at the bound's step "
                     "time). A bound is a best case, so every point lies on the diagonal or {} it; the closer, "
                     "the tighter the bound and the fewer candidates the search simulates. The top {} in red.",
                     obj, higher ? "below" : "above", s["top"].size()),
         spec});
  }
  return page;
}

}  // namespace moesim::reports
