// reports/report_plan.cpp: the page of a plan (reports/report.hpp, plan_report): the facts
// of `moesim plan`'s summary (reports::plan_summary_json: the space, the candidates' fates,
// the top K, the scenario as given), the top K's breakdowns beside the scenario as given,
// why the winner wins (explain_winner: the comparisons, their bands, the decisions' record
// on the what-if corpus, the step's difference by term), where the candidates went, and
// each simulated candidate's objective against its bound (the bound is a best case: a
// point on its better side is a violation).
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "predict/bands.hpp"
#include "reports/report_charts.hpp"
#include "reports/sweep_detail.hpp"
#include "reports/text.hpp"

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

// A column's value in a row as the plan's table prints it ("default" where the scenario
// leaves it to the loader).
std::string cell_value(const Json& row, const std::string& column) {
  if (!row.contains(column) || row[column].is_null() || row[column] == "") return "default";
  const Json& v = row[column];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& x : v) parts.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, "+"));
  }
  return v.dump();
}

// "tp 2 -> 1; dispatcher alltoall -> hybridep": the columns that differ, reference -> winner.
std::string changes_text(const std::vector<std::string>& columns, const Json& reference,
                         const Json& winner) {
  std::vector<std::string> parts;
  for (const auto& c : columns) {
    std::string name = c.substr(c.rfind('.') + 1);
    if (name == "micro_batch_size") name = "mbs";
    parts.push_back(
        fmt::format("{} {} -> {}", name, cell_value(reference, c), cell_value(winner, c)));
  }
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, "; "));
}

// The decisions behind a claim, in short: "ep_span (2 pairs, 1 wrong way); dispatcher (3)".
std::string decisions_text(const config::ClaimAssessment& claim) {
  std::vector<std::string> parts;
  for (const auto d : claim.decisions) {
    const auto& ev = config::evidence_for(d);
    parts.push_back(fmt::format(
        "{} ({}{})", config::decision_names().name(d), counted(ev.pairs, "pair"),
        ev.wrong_direction ? fmt::format(", {} the wrong way", ev.wrong_direction) : ""));
  }
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, "; "));
}

// Why the winner wins (issue #45 item 5): its step against the scenario as given (else the
// runner-up) term by term, each comparison's differing settings, gain, the model's 80%
// band on it and what the what-if corpus's pairs say about the decisions behind it, and how
// well each of those decisions and the bands themselves are validated.
void explain_winner(HtmlPage& page, const Json& s, const PlanSummaryInfo& info) {
  if (s["top"].empty()) return;
  const Json& winner = s["top"][0];
  const std::int64_t winner_id = winner["id"].get<std::int64_t>();
  const double step = winner["step_time_s"].is_number() ? winner["step_time_s"].get<double>() : 0;
  if (const auto b = predict::corpus_step_band(step, info.gpu, info.model); b.pool > 0 && step > 0)
    page.facts.emplace_back("the winner's step",
                            fmt::format("{:.3f} s; the model's {:.0f}% band {:.3f} - {:.3f} s ({})",
                                        step, 100 * b.level, b.lo, b.hi, b.basis));
  const auto runs = predict::band_coverage(predict::corpus_residuals());
  const auto pairs = predict::ratio_band_coverage(predict::corpus_pair_residuals());
  page.facts.emplace_back(
      "how the bands hold",
      fmt::format("out of sample on the corpus, {} of {} measured runs ({:.0f}%) lie inside their "
                  "own 80% band and "
                  "{} of {} measured pairs ({:.0f}%) inside their ratio band (calibrate corpus: "
                  "band_coverage_pct)",
                  runs.inside, runs.runs, runs.pct(), pairs.inside, pairs.runs, pairs.pct()));

  std::map<std::int64_t, const Json*> rows;
  for (const auto& row : s["top"]) rows[row["id"].get<std::int64_t>()] = &row;
  HtmlTable why{
      "Why the winner wins",
      fmt::format(
          "The winner (#{}) against the scenario as given and against each of the other top "
          "candidates: the settings that differ (the other's value -> the winner's), the "
          "winner's gain in {}, the model's 80% band on that gain (the measured pairs' "
          "out-of-sample ratio errors: where it reaches 0 the model does not order the two), "
          "the decisions behind the settings with their measured pairs, and the verdict of "
          "the what-if corpus (within_error, backed, uncertain, extrapolated, unvalidated: "
          "docs/COMMANDS.md, plan --given).",
          winner_id, s["objective"].get<std::string>()),
      {"against", "settings that differ", "winner's gain", "80% band", "ordered by the model",
       "decisions (measured pairs)", "verdict"},
      {}};
  std::vector<config::Decision> deciding;
  const auto add = [&](const std::string& against, const Json& reference,
                       const predict::PlanEvidence& e) {
    std::string band = "-", ordered = "-";
    if (const auto b = predict::ratio_band(1 + e.gain_pct / 100, predict::corpus_pair_residuals());
        b.pool > 0) {
      band = fmt::format("{:+.1f}% to {:+.1f}%", 100 * (b.lo - 1), 100 * (b.hi - 1));
      ordered = b.lo > 1 ? "yes" : "no: within the band";
    }
    why.rows.push_back({against, changes_text(e.columns, reference, winner),
                        fmt::format("{:+.1f}%", e.gain_pct), band, ordered, decisions_text(e.claim),
                        std::string(config::claim_support_names().name(e.claim.support))});
    for (const auto d : e.claim.decisions)
      if (std::find(deciding.begin(), deciding.end(), d) == deciding.end()) deciding.push_back(d);
  };
  if (s.contains("given")) {
    const Json& g = s["given"];
    const auto it = std::find_if(info.given_evidence.begin(), info.given_evidence.end(),
                                 [&](const predict::PlanEvidence& e) { return e.id == winner_id; });
    if (it != info.given_evidence.end())
      add("the scenario as given", g, *it);
    else
      why.rows.push_back({"the scenario as given",
                          g["status"] == "ok"
                              ? "its rank: no candidate beats it"
                              : "it does not run: " + g["status"].get<std::string>(),
                          "-", "-", "-", "-", "-"});
  }
  for (const auto& e : info.runner_ups)
    if (const auto r = rows.find(e.id); r != rows.end())
      add(fmt::format("#{}", e.id), *r->second, e);
  if (why.rows.empty()) return;
  page.tables.push_back(std::move(why));

  HtmlTable record{
      "How well the deciding decisions are validated",
      "Each decision behind the settings above, on the what-if corpus (measured pairs of published "
      "runs that differ in it: calibration/evidence/decisions.json, moesim validate): how many "
      "pairs, "
      "the model's mean and worst error on their ratio, the largest effect a pair measured, and "
      "pairs whose measured difference over 2% the model got the wrong way. A decision without a "
      "pair "
      "is the model's alone.",
      {"decision", "measured pairs", "mean ratio error", "worst ratio error (pair)",
       "largest measured effect", "wrong way"},
      {}};
  for (const auto d : deciding) {
    const auto& ev = config::evidence_for(d);
    if (ev.pairs == 0) {
      record.rows.push_back(
          {std::string(config::decision_names().name(d)), "0", "-", "-", "-", "-"});
      continue;
    }
    record.rows.push_back({std::string(config::decision_names().name(d)), std::to_string(ev.pairs),
                           fmt::format("{:.1f}%", ev.mean_abs_ratio_error_pct),
                           fmt::format("{:.1f}% ({})", ev.max_abs_ratio_error_pct, ev.worst),
                           fmt::format("{:.1f}%", ev.max_measured_effect_pct),
                           std::to_string(ev.wrong_direction)});
  }
  if (!record.rows.empty()) page.tables.push_back(std::move(record));

  // The winner's step against the reference's, term by term.
  const bool given_ok = s.contains("given") && s["given"]["status"] == "ok";
  const Json* reference = given_ok ? &s["given"] : s["top"].size() > 1 ? &s["top"][1] : nullptr;
  if (!reference) return;
  const std::string ref_name = given_ok
                                   ? std::string("the scenario as given")
                                   : fmt::format("#{}", (*reference)["id"].get<std::int64_t>());
  Json values = Json::array();
  std::vector<std::string> terms;
  for (const auto& c : breakdown_categories()) {
    const std::string key = std::string("breakdown.") + c.key;
    const double a = reference->value(key, 0.0), b = winner.value(key, 0.0);
    terms.emplace_back(c.label);
    values.push_back(
        {{"term", c.label},
         {"delta", b - a},
         {"a", a},
         {"b", b},
         {"effect", b - a > 0 ? "adds time in the winner" : "saves time in the winner"}});
  }
  page.charts.push_back(
      {"What the winner changes",
       fmt::format("The winner's (#{}, B) critical-rank step minus {}'s (A), by breakdown "
                   "category: they add up to "
                   "the step-time difference at the same global batch on the same GPUs. The table "
                   "above says "
                   "how far the model's record lets one trust each decision behind it.",
                   winner_id, ref_name),
       delta_bars_spec(std::move(values), terms,
                       fmt::format("winner - {}, seconds of the step", ref_name),
                       "adds time in the winner", "saves time in the winner", "s", "s")});
}

}  // namespace

HtmlPage plan_report(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Json s = plan_summary_json(csv, info);
  const std::string obj = s["objective"].get<std::string>();
  const bool higher = config::higher_is_better(info.sweep.objective);
  const auto value_text = [](const Json& v) {
    return v.is_number() ? fmt::format("{:.4g}", v.get<double>()) : v.dump();
  };

  HtmlPage page;
  page.title = fmt::format("moesim report: plan {}", info.sweep.name);
  page.subtitle = fmt::format("{} on {} GPUs: {} candidates, {} evaluated, {} simulated.",
                              info.sweep.sweep_file, info.gpus, info.sweep.combinations,
                              info.sweep.rows, info.simulated);
  page.facts.emplace_back("objective",
                          fmt::format("{} ({} is better)", obj, higher ? "higher" : "lower"));
  page.facts.emplace_back(
      "space",
      fmt::format("{} layouts kept by the rules ({} expanded) x the settings {}", info.layouts,
                  info.layouts_expanded,
                  info.settings.empty() ? std::string("(none varied)")
                                        : fmt::format("{}", fmt::join(info.settings, ", "))));
  std::string fates;
  for (const auto& [fate, n] : s["fates"].items())
    fates += fmt::format("{}{} {}", fates.empty() ? "" : ", ", fate, n.get<std::int64_t>());
  page.facts.emplace_back("fates", fates);
  if (!info.sweep.pruned.empty())  // the candidates each layout rule drops
    page.facts.emplace_back("layout rules", detail::pruned_text(info.sweep.pruned));
  add_predicted_with_fact(page, s);
  add_caveat_facts(page, s);
  page.facts.emplace_back(
      "wall time", fmt::format("{:.1f} s (bounds {:.1f} s, simulations {:.1f} s)", info.wall_s,
                               info.bound_wall_s, info.simulate_wall_s));
  std::vector<std::pair<std::string, Json>> runs;
  int rank = 0;
  for (const auto& row : s["top"]) {
    const std::string id = fmt::format("#{}", row["id"].get<std::int64_t>());
    page.facts.emplace_back(
        fmt::format("top {}", ++rank),
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
        text += fmt::format(", rank {}{}", g["rank_exact"].get<bool>() ? "" : "at least ",
                            g["rank"].get<std::int64_t>());
      runs.emplace_back("as given", breakdown_of(g));
    }
    page.facts.emplace_back("the scenario as given", text);
  }
  if (!info.violations.empty())
    page.facts.emplace_back(
        "bound violations",
        fmt::format("{} (simulated better than their bound)", fmt::join(info.violations, ", ")));

  if (!runs.empty())
    page.charts.push_back(breakdown_chart(
        runs, "The top candidates' steps",
        fmt::format("The critical rank's step of each of the top {} by {} (and of the scenario as "
                    "given, when it "
                    "was simulated), by category; the facts above list each one's settings.",
                    s["top"].size(), obj)));

  explain_winner(page, s, info);

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
  page.charts.push_back({"Where the candidates went",
                         "Every candidate of the space by fate: rule (a layout rule drops its "
                         "layout), invalid (the loader refuses "
                         "it), memory (it does not fit), duplicate (a varied setting is inert "
                         "there), dominated (a recompute rung "
                         "that recomputes less fits), bound (its lower bound cannot beat the top "
                         "K's last), simulated. Log scale.",
                         fate_spec});

  // Each simulated candidate against its bound.
  std::map<std::int64_t, double> simulated;
  for (const auto& r : csv.rows)
    if (const auto v = predict::objective_value(r.result, info.sweep.objective))
      simulated[r.id] = *v;
  std::map<std::int64_t, bool> top;
  for (const auto& row : s["top"]) top[row["id"].get<std::int64_t>()] = true;
  Json points = Json::array();
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (const auto& [id, bound] : info.bounds) {
    const auto it = simulated.find(id);
    if (it == simulated.end() || !std::isfinite(bound)) continue;
    points.push_back({{"id", id},
                      {"bound", bound},
                      {"value", it->second},
                      {"top", top.count(id) ? "top" : "other"}});
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
    page.charts.push_back({"Simulated against the bound",
                           fmt::format("Each simulated candidate's {} against its lower bound's "
                                       "(the objective at the bound's step "
                                       "time). A bound is a best case, so every point lies on the "
                                       "diagonal or {} it; the closer, "
                                       "the tighter the bound and the fewer candidates the search "
                                       "simulates. The top {} in red.",
                                       obj, higher ? "below" : "above", s["top"].size()),
                           spec});
  }
  return page;
}

}  // namespace moesim::reports
