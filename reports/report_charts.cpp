#include "reports/report_charts.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "predict/sweep.hpp"
#include "reports/sweep_detail.hpp"

namespace moesim::reports::charts {
namespace {

// The critical rank's breakdown as `run --json` names it.
constexpr Category kCategories[] = {
    {"compute", "compute", "#4c78a8", "white"},
    {"exposed_communication", "exposed communication", "#f58518", "white"},
    {"schedule_bubble", "schedule bubble", "#bab0ac", "#222"},
    {"stage_imbalance", "stage imbalance", "#9d755d", "white"},
    {"straggler_wait", "straggler wait", "#72b7b2", "#222"},
    {"host_bound_idle", "host-bound idle", "#e45756", "white"},
    {"other", "other", "#dddddd", "#222"},
};

}  // namespace

Json string_list(const std::vector<std::string>& v) {
  Json j = Json::array();
  for (const auto& s : v) j.push_back(s);
  return j;
}

void add_predicted_with_fact(HtmlPage& page, const Json& summary) {
  if (const auto with = summary.value("predicted_with", std::string());
      !predict::predicted_as_shipped(with))
    page.facts.emplace_back("predicted with", with);
}

void add_caveat_facts(HtmlPage& page, const Json& summary) {
  for (const auto& c : summary.value("caveats", Json::array()))
    page.facts.emplace_back(
        fmt::format("caveat of {}",
                    detail::caveat_rows_text(c["ids"].get<std::vector<std::int64_t>>(),
                                             c["of"].get<std::int64_t>())),
        c["caveat"].get<std::string>());
}

Json vega_spec(std::string_view text, int width, int height) {
  Json spec = Json::parse(text);
  spec["width"] = width;
  spec["height"] = height;
  spec["padding"] = 5;
  spec["autosize"] = {{"type", "pad"}};
  spec["config"] = Json::parse(R"json({
    "axis": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 320},
    "legend": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 320}})json");
  return spec;
}

Json stacked_seconds_spec(const std::string& group, const std::string& colour,
                          const std::string& tooltip, double band_padding, int height, Json values,
                          const std::vector<std::string>& groups,
                          const std::vector<std::string>& domain,
                          const std::vector<std::string>& range) {
  Json spec = vega_spec(R"json({
    "data": [{"name": "table",
              "transform": [{"type": "stack", "groupby": [], "sort": {"field": "order"}, "field": "seconds"}]}],
    "scales": [
      {"name": "y", "type": "band", "range": "height"},
      {"name": "x", "type": "linear", "domain": {"data": "table", "field": "y1"}, "range": "width", "nice": true,
       "zero": true},
      {"name": "color", "type": "ordinal"}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "seconds of the step", "grid": true},
             {"orient": "left", "scale": "y"}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "table"},
       "encode": {"enter": {
         "y": {"scale": "y"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "field": "y0"}, "x2": {"scale": "x", "field": "y1"},
         "fill": {"scale": "color"}}}}]
  })json",
                        900, height);
  spec["data"][0]["transform"][0]["groupby"] = Json::array({group});
  spec["data"][0]["values"] = std::move(values);
  spec["scales"][0]["padding"] = band_padding;
  spec["scales"][0]["domain"] = string_list(groups);
  spec["scales"][2]["domain"] = string_list(domain);
  spec["scales"][2]["range"] = string_list(range);
  auto& enter = spec["marks"][0]["encode"]["enter"];
  enter["y"]["field"] = group;
  enter["fill"]["field"] = colour;
  enter["tooltip"] = {{"signal", tooltip}};
  return spec;
}

std::span<const Category> breakdown_categories() {
  return kCategories;
}

Json delta_bars_spec(Json values, const std::vector<std::string>& terms,
                     const std::string& axis_title, const std::string& adds,
                     const std::string& saves, const std::string& unit_tip,
                     const std::string& unit_text) {
  Json spec = vega_spec(R"json({
    "data": [{"name": "terms"}],
    "scales": [
      {"name": "y", "type": "band", "range": "height", "padding": 0.2},
      {"name": "x", "type": "linear", "domain": {"data": "terms", "field": "delta"}, "range": "width", "nice": true,
       "zero": true, "padding": 64},
      {"name": "color", "type": "ordinal", "range": ["#e45756", "#54a24b"]}],
    "axes": [{"orient": "bottom", "scale": "x", "grid": true}, {"orient": "left", "scale": "y"}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "terms"},
       "encode": {"enter": {
         "y": {"scale": "y", "field": "term"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "value": 0}, "x2": {"scale": "x", "field": "delta"},
         "fill": {"scale": "color", "field": "effect"}}}},
      {"type": "rule",
       "encode": {"enter": {"x": {"scale": "x", "value": 0}, "y": {"value": 0}, "y2": {"signal": "height"},
                            "stroke": {"value": "#333"}}}},
      {"type": "text", "from": {"data": "terms"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "delta", "offset": {"signal": "datum.delta > 0 ? 4 : -4"}},
         "y": {"scale": "y", "field": "term", "band": 0.5},
         "align": {"signal": "datum.delta > 0 ? 'left' : 'right'"}, "baseline": {"value": "middle"},
         "fill": {"value": "#222"}}}}]
  })json",
                        800, std::max(60, 24 * static_cast<int>(terms.size())));
  spec["data"][0]["values"] = std::move(values);
  spec["scales"][0]["domain"] = string_list(terms);
  spec["scales"][2]["domain"] = string_list({adds, saves});
  spec["axes"][0]["title"] = axis_title;
  spec["marks"][0]["encode"]["enter"]["tooltip"]["signal"] = fmt::format(
      "{{'term': datum.term, 'B - A {0}': format(datum.delta, '+.4f'), 'A {0}': datum.a == null ? "
      "'' : "
      "format(datum.a, '.4f'), 'B {0}': datum.b == null ? '' : format(datum.b, '.4f')}}",
      unit_tip);
  spec["marks"][2]["encode"]["enter"]["text"]["signal"] =
      fmt::format("format(datum.delta, '+.3f') + ' {}'", unit_text);
  return spec;
}

HtmlChart breakdown_chart(const std::vector<std::pair<std::string, Json>>& runs,
                          const std::string& title, const std::string& caption) {
  Json values = Json::array();
  std::vector<std::string> labels, colors, run_names;
  for (const auto& c : kCategories) {
    labels.push_back(c.label);
    colors.push_back(c.color);
  }
  for (const auto& [run, breakdown] : runs) {
    run_names.push_back(run);
    double step = 0;
    for (const auto& c : kCategories) step += breakdown.value(c.key, 0.0);
    int order = 0;
    for (const auto& c : kCategories) {
      const double s = breakdown.value(c.key, 0.0);
      values.push_back({{"run", run},
                        {"category", c.label},
                        {"seconds", s},
                        {"share", step > 0 ? s / step : 0},
                        {"ink", c.ink},
                        {"order", order++}});
    }
  }
  Json spec = stacked_seconds_spec(
      "run", "category",
      "{'run': datum.run, 'category': datum.category, 'seconds': format(datum.seconds, '.3f'), "
      "'share of the step': format(datum.share, '.1%')}",
      0.25, 56 * static_cast<int>(runs.size()), std::move(values), run_names, labels, colors);
  // Each part's seconds written inside its bar where it is wide enough.
  spec["marks"].push_back(Json::parse(R"json(
      {"type": "text", "from": {"data": "table"},
       "encode": {"enter": {
         "x": {"signal": "(scale('x', datum.y0) + scale('x', datum.y1)) / 2"},
         "y": {"scale": "y", "field": "run", "band": 0.5},
         "align": {"value": "center"}, "baseline": {"value": "middle"}, "fill": {"field": "ink"},
         "text": {"signal": "scale('x', datum.y1) - scale('x', datum.y0) > 60 ? format(datum.seconds, '.2f') + ' s' : ''"}}}})json"));
  return {title, caption, spec};
}

}  // namespace moesim::reports::charts
