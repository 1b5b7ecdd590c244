// reports/report_validate.cpp: the page of predicted against measured per run (reports/report.hpp,
// validate_report; the rows: predict/validate.hpp).
#include "reports/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "reports/report_charts.hpp"
#include "reports/text.hpp"
#include "reports/validate.hpp"

namespace moesim::reports {

using namespace charts;  // what the pages share (reports/report_charts.hpp)

HtmlPage validate_report(const std::vector<predict::ValidateRow>& rows, int skipped,
                         const std::vector<std::string>& system_set) {
  const predict::ValidateSummary sum = predict::summarize(rows);
  const auto& all = sum.all;
  HtmlPage page;
  page.title = "moesim report: predicted against measured";
  page.subtitle =
      "The runs with a measured block under the given paths, as moesim validate evaluates them.";
  page.facts = {{"runs", std::to_string(all.runs)},
                {"mean absolute error", fmt::format("{:.2f}%", all.mae())},
                {"over tolerance", std::to_string(sum.timing_failed)}};
  if (all.worst)
    page.facts.emplace_back("worst",
                            fmt::format("{} ({:+.1f}%)", all.worst->name, all.worst->error_pct));
  if (sum.memory.runs)
    page.facts.emplace_back("memory points",
                            fmt::format("{}, mean absolute error {:.2f}%, {} over tolerance",
                                        sum.memory.runs, sum.memory.mae(), sum.memory_failed));
  if (skipped)
    page.facts.emplace_back("skipped",
                            fmt::format("{} without a measured block", counted(skipped, "file")));
  if (!system_set.empty()) page.facts.emplace_back("what-if", what_if_text(system_set));

  std::vector<std::string> runs, metrics;
  std::set<std::string> seen;
  Json values = Json::array();
  double lo = 0, hi = 0;
  bool positive = true;
  for (const auto& r : rows) {
    std::string run = seen.insert(r.name).second ? r.name : fmt::format("{} ({})", r.name, r.file);
    runs.push_back(run);
    if (std::find(metrics.begin(), metrics.end(), r.metric) == metrics.end())
      metrics.push_back(r.metric);
    values.push_back({{"run", run},
                      {"file", r.file},
                      {"metric", r.metric},
                      {"measured", r.measured},
                      {"predicted", r.predicted},
                      {"error", r.error_pct},
                      {"tol", r.tolerance_pct},
                      {"status", r.ok ? "within tolerance" : "over tolerance"}});
    const double a = std::min(r.measured, r.predicted), b = std::max(r.measured, r.predicted);
    lo = lo == 0 ? a : std::min(lo, a);
    hi = std::max(hi, b);
    positive = positive && a > 0;
  }
  const Json tooltip = {
      {"signal",
       "{'run': datum.run, 'metric': datum.metric, 'measured': format(datum.measured, '.4~g'), "
       "'predicted': format(datum.predicted, '.4~g'), 'error': format(datum.error, '+.1f') + '%', "
       "'tolerance': format(datum.tol, '.1f') + '%'}"}};

  // The x extent covers every error and every tolerance band.
  Json bars = vega_spec(R"json({
    "data": [
      {"name": "runs"},
      {"name": "extent", "source": "runs",
       "transform": [{"type": "formula", "as": "lo", "expr": "min(datum.error, -datum.tol)"},
                     {"type": "formula", "as": "hi", "expr": "max(datum.error, datum.tol)"},
                     {"type": "fold", "fields": ["lo", "hi"]}]}],
    "scales": [
      {"name": "y", "type": "band", "range": "height", "padding": 0.2},
      {"name": "x", "type": "linear", "domain": {"data": "extent", "field": "value"}, "range": "width",
       "nice": true, "zero": true},
      {"name": "status", "type": "ordinal", "domain": ["within tolerance", "over tolerance"],
       "range": ["#4c78a8", "#e45756"]}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "error, % of measured (predicted - measured)", "grid": true},
             {"orient": "left", "scale": "y"}],
    "legends": [{"fill": "status", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "runs"},
       "encode": {"enter": {
         "y": {"scale": "y", "field": "run"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "signal": "-datum.tol"}, "x2": {"scale": "x", "field": "tol"},
         "fill": {"value": "#e8e8e8"}}}},
      {"type": "rect", "from": {"data": "runs"},
       "encode": {"enter": {
         "y": {"scale": "y", "field": "run", "offset": 3}, "height": {"scale": "y", "band": 1, "offset": -6},
         "x": {"scale": "x", "value": 0}, "x2": {"scale": "x", "field": "error"},
         "fill": {"scale": "status", "field": "status"}}}},
      {"type": "rule",
       "encode": {"enter": {"x": {"scale": "x", "value": 0}, "y": {"value": 0}, "y2": {"signal": "height"},
                            "stroke": {"value": "#333"}}}}]
  })json",
                        700, std::max(60, 22 * static_cast<int>(runs.size())));
  bars["data"][0]["values"] = values;
  bars["scales"][0]["domain"] = string_list(runs);
  bars["marks"][1]["encode"]["enter"]["tooltip"] = tooltip;
  page.charts.push_back(
      {"Error per run, with its tolerance",
       "Predicted minus measured as a percentage of measured, per run; the grey band is the run's "
       "tolerance_pct (moesim validate fails a run outside it).",
       bars});

  // Log axes where every value is positive (metrics of different units then share the
  // plot); the dashed line is predicted = measured.
  Json scatter = vega_spec(R"json({
    "data": [{"name": "runs"}, {"name": "diagonal"}],
    "scales": [
      {"name": "x", "range": "width", "nice": false},
      {"name": "y", "range": "height", "nice": false},
      {"name": "metric", "type": "ordinal", "range": "category"}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "measured", "grid": true},
             {"orient": "left", "scale": "y", "title": "predicted", "grid": true}],
    "legends": [{"fill": "metric", "title": "metric", "orient": "right"}],
    "marks": [
      {"type": "rule", "from": {"data": "diagonal"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "lo"}, "y": {"scale": "y", "field": "lo"},
         "x2": {"scale": "x", "field": "hi"}, "y2": {"scale": "y", "field": "hi"},
         "stroke": {"value": "#888"}, "strokeDash": {"value": [4, 4]}}}},
      {"type": "symbol", "from": {"data": "runs"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "measured"}, "y": {"scale": "y", "field": "predicted"},
         "size": {"value": 70}, "fill": {"scale": "metric", "field": "metric"},
         "stroke": {"signal": "datum.status == 'over tolerance' ? '#b00020' : 'white'"},
         "strokeWidth": {"signal": "datum.status == 'over tolerance' ? 2 : 0.5"}}}}]
  })json",
                           460, 460);
  const double pad = positive ? 1.25 : 1.0;
  const std::string type = positive ? "log" : "linear";
  scatter["data"][0]["values"] = values;
  scatter["data"][1]["values"] = Json::array({{{"lo", lo / pad}, {"hi", hi * pad}}});
  for (int axis : {0, 1}) {
    scatter["scales"][axis]["type"] = type;
    scatter["scales"][axis]["domain"] = Json::array({lo / pad, hi * pad});
  }
  scatter["scales"][2]["domain"] = string_list(metrics);
  scatter["marks"][1]["encode"]["enter"]["tooltip"] = tooltip;
  page.charts.push_back(
      {"Predicted against measured",
       fmt::format("Each run's measured metric against its prediction ({} axes; the dashed line is "
                   "predicted = measured). Runs over their tolerance are ringed in red.",
                   type),
       scatter});
  return page;
}

}  // namespace moesim::reports
