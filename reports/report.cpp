#include "reports/report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "reports/run.hpp"
#include "schedules/schedule_kind.hpp"

namespace moesim::reports {

using Json = nlohmann::ordered_json;

namespace {

// The critical rank's breakdown as `run --json` names it, the pipeline bubble split into
// the schedule's own and stage imbalance (they add up to the step time).
struct Category {
  const char* key;
  const char* label;
  const char* color;
  const char* ink;  // text on the color
};
constexpr Category kCategories[] = {
    {"compute", "compute", "#4c78a8", "white"},
    {"exposed_communication", "exposed communication", "#f58518", "white"},
    {"schedule_bubble", "schedule bubble", "#bab0ac", "#222"},
    {"stage_imbalance", "stage imbalance", "#9d755d", "white"},
    {"host_bound_idle", "host-bound idle", "#e45756", "white"},
    {"other", "other", "#dddddd", "#222"},
};

// Memory parts as `run --json`'s peak_memory_parts_gib names them.
constexpr Category kMemoryParts[] = {
    {"weights_grads", "weights and gradients", "#4c78a8", "white"},
    {"optimizer", "optimizer state", "#72b7b2", "#222"},
    {"activations", "activations", "#f58518", "white"},
    {"ep_buffers", "EP buffers", "#b279a2", "white"},
    {"graph_buffers", "CUDA graph buffers", "#9d755d", "white"},
};
constexpr const char* kFragmentationColor = "#dddddd";

// Fixed-precision numbers keep the specs small (the timeline has thousands of bars).
double rounded(double v, double quantum) {
  return std::round(v / quantum) * quantum;
}

Json string_list(const std::vector<std::string>& v) {
  Json j = Json::array();
  for (const auto& s : v) j.push_back(s);
  return j;
}

// A Vega spec from its text, with the size and style every chart shares; the caller
// fills in the data and what depends on it (scale domains, colours).
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

// The sweep charts' points over the data sets "rows" and "front" and the ordinal scale
// "front": every ok row, the Pareto front's larger, opaque and drawn on top, and each
// front row labelled (`label`, a Vega expression) beside it.
Json pareto_marks(const std::string& x, const std::string& y, const std::string& label,
                  const std::string& tooltip) {
  const auto front = [](const char* yes, const char* no) {
    return Json{{"signal", fmt::format("datum.front == 'Pareto front' ? {} : {}", yes, no)}};
  };
  Json symbol = {{"type", "symbol"}, {"from", {{"data", "rows"}}}};
  symbol["encode"]["enter"] = {{"x", {{"scale", "x"}, {"field", x}}},
                               {"y", {{"scale", "y"}, {"field", y}}},
                               {"size", front("110", "50")},
                               {"fill", {{"scale", "front"}, {"field", "front"}}},
                               {"fillOpacity", front("1", "0.55")},
                               {"zindex", front("1", "0")},
                               {"tooltip", {{"signal", tooltip}}}};
  Json text = {{"type", "text"}, {"from", {{"data", "front"}}}};
  text["encode"]["enter"] = {{"x", {{"scale", "x"}, {"field", x}, {"offset", 8}}},
                             {"y", {{"scale", "y"}, {"field", y}}},
                             {"baseline", {{"value", "middle"}}},
                             {"fill", {{"value", "#b00020"}}},
                             {"text", {{"signal", label}}}};
  return Json::array({std::move(symbol), std::move(text)});
}

// Horizontal bars of seconds of the step, one per value of `group` (in `groups` order),
// each stacked by its rows' "order" and coloured by `colour` (`domain` -> `range`); the
// data set is "table", the scales "y", "x" and "color".
Json stacked_seconds_spec(const std::string& group, const std::string& colour, const std::string& tooltip,
                          double band_padding, int height, Json values, const std::vector<std::string>& groups,
                          const std::vector<std::string>& domain, const std::vector<std::string>& range) {
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

// Horizontal stacked bars of the breakdown, one per run (label -> run --json "breakdown").
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

HtmlChart memory_chart(const config::Scenario& sc, const predict::Prediction& p,
                       const Json& parts) {
  const double capacity_gib = sc.system.gpu.hbm_GB.value * 1e9 / (1024.0 * 1024.0 * 1024.0);
  Json values = Json::array();
  std::vector<std::string> labels, colors;
  int order = 0;
  for (const auto& c : kMemoryParts) {
    labels.push_back(c.label);
    colors.push_back(c.color);
    values.push_back({{"part", c.label}, {"gib", parts.value(c.key, 0.0)}, {"order", order++}});
  }
  const double fragmentation = p.reserved_memory_gib - p.peak_memory_gib;
  if (fragmentation > 0) {
    labels.push_back("fragmentation allowance");
    colors.push_back(kFragmentationColor);
    values.push_back(
        {{"part", "fragmentation allowance"}, {"gib", fragmentation}, {"order", order++}});
  }
  Json spec = vega_spec(R"json({
    "data": [
      {"name": "parts", "transform": [{"type": "stack", "sort": {"field": "order"}, "field": "gib"}]},
      {"name": "capacity"}],
    "scales": [
      {"name": "x", "type": "linear", "range": "width", "nice": false, "zero": true},
      {"name": "color", "type": "ordinal"}],
    "axes": [{"orient": "bottom", "scale": "x", "grid": true}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "parts"},
       "encode": {"enter": {
         "y": {"value": 14}, "y2": {"signal": "height"},
         "x": {"scale": "x", "field": "y0"}, "x2": {"scale": "x", "field": "y1"},
         "fill": {"scale": "color", "field": "part"},
         "tooltip": {"signal": "{'part': datum.part, 'GiB': format(datum.gib, '.2f')}"}}}},
      {"type": "rule", "from": {"data": "capacity"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "gib"}, "y": {"value": 0}, "y2": {"signal": "height + 4"},
         "stroke": {"value": "#b00020"}, "strokeWidth": {"value": 2}}}},
      {"type": "text", "from": {"data": "capacity"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "gib", "offset": -4}, "y": {"value": 10},
         "align": {"value": "right"}, "fill": {"value": "#b00020"}, "text": {"field": "label"}}}}]
  })json",
                        900, 60);
  spec["data"][0]["values"] = values;
  spec["data"][1]["values"] =
      Json::array({{{"gib", capacity_gib},
                    {"label", fmt::format("{} memory: {:g} GB = {:.1f} GiB", sc.system.gpu.name,
                                          sc.system.gpu.hbm_GB.value, capacity_gib)}}});
  spec["scales"][0]["domain"] =
      Json::array({0, 1.08 * std::max(capacity_gib, p.reserved_memory_gib)});
  spec["scales"][1]["domain"] = string_list(labels);
  spec["scales"][1]["range"] = string_list(colors);
  spec["axes"][0]["title"] =
      fmt::format("GiB on the peak pipeline rank ({})", p.fits_in_memory ? "fits" : "does not fit");
  return {"Memory by part, against the GPU's capacity",
          fmt::format("The pipeline rank with the most memory: {:.1f} GiB at its peak{}; the red "
                      "rule is the GPU's "
                      "capacity. Run --json: peak_memory_parts_gib.",
                      p.peak_memory_gib,
                      fragmentation > 0
                          ? fmt::format(", {:.1f} GiB with the allocator's fragmentation allowance",
                                        p.reserved_memory_gib)
                          : std::string()),
          spec};
}

HtmlChart module_chart(const Json& compute, const Json& host_bound) {
  std::map<std::string, double> total;
  for (const auto& [m, s] : compute.items()) total[m] += s.get<double>();
  for (const auto& [m, s] : host_bound.items()) total[m] += s.get<double>();
  std::vector<std::pair<std::string, double>> modules(total.begin(), total.end());
  std::stable_sort(modules.begin(), modules.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::vector<std::string> names;
  Json values = Json::array();
  for (const auto& [m, t] : modules) {
    if (t <= 0) continue;
    names.push_back(m);
    values.push_back(
        {{"module", m}, {"kind", "compute"}, {"seconds", compute.value(m, 0.0)}, {"order", 0}});
    values.push_back({{"module", m},
                      {"kind", "host-bound idle"},
                      {"seconds", host_bound.value(m, 0.0)},
                      {"order", 1}});
  }
  const Json spec = stacked_seconds_spec(
      "module", "kind", "{'module': datum.module, 'what': datum.kind, 'seconds': format(datum.seconds, '.3f')}",
      0.2, std::max(60, 24 * static_cast<int>(names.size())), std::move(values), names,
      {"compute", "host-bound idle"}, {"#4c78a8", "#e45756"});
  return {"Time per module (critical rank)",
          "Seconds the critical rank's compute stream ran each module's kernels, and sat idle "
          "before them because "
          "the host had not launched them yet (host-bound idle). Run --json: compute_by_module, "
          "host_bound_idle_by_module; outside_layers holds pipeline transfers, DP collectives and "
          "the optimizer.",
          spec};
}

const std::map<std::string, std::string> kPassColors = {{"forward", "#4c78a8"},
                                                        {"backward", "#f58518"},
                                                        {"optimizer", "#54a24b"},
                                                        {"mixed", "#b279a2"}};

HtmlChart timeline_chart(const predict::Prediction& traced, std::size_t kernels) {
  const auto& step = traced.step;
  const std::vector<TimelineBar> bars = timeline_bars(step, step.critical_rank, 2500);
  Json values = Json::array();
  std::vector<std::string> lanes, passes;
  double end = step.step_time_s;
  for (const auto& b : bars) {
    if (std::find(lanes.begin(), lanes.end(), b.lane) == lanes.end()) lanes.push_back(b.lane);
    if (std::find(passes.begin(), passes.end(), b.pass) == passes.end()) passes.push_back(b.pass);
    end = std::max(end, b.end_s);
    values.push_back({{"lane", b.lane},
                      {"pass", b.pass},
                      {"parts", b.parts},
                      {"s", rounded(b.start_s, 1e-7)},
                      {"e", rounded(b.end_s, 1e-7)},
                      {"busy", rounded(b.busy_s, 1e-7)},
                      {"k", b.kernels}});
  }
  std::vector<std::string> pass_order, pass_colors;
  for (const char* p : {"forward", "backward", "optimizer", "mixed"})
    if (std::find(passes.begin(), passes.end(), p) != passes.end()) {
      pass_order.push_back(p);
      pass_colors.push_back(kPassColors.at(p));
    }
  // Zoom (mouse wheel, about the pointer) and pan (drag) the time axis; a double click
  // shows the whole step again (after Vega's zoomable scatter plot example). WHOLE is
  // replaced by the step's extent.
  std::string text = R"json({
    "signals": [
      {"name": "down", "value": null,
       "on": [{"events": "touchend", "update": "null"}, {"events": "mousedown, touchstart", "update": "xy()"}]},
      {"name": "xcur", "value": null, "on": [{"events": "mousedown, touchstart, touchend", "update": "slice(xdom)"}]},
      {"name": "delta", "value": [0, 0],
       "on": [{"events": [{"source": "window", "type": "mousemove", "consume": true,
                           "between": [{"type": "mousedown"}, {"source": "window", "type": "mouseup"}]}],
               "update": "down ? [down[0] - x(), 0] : [0, 0]"}]},
      {"name": "anchor", "value": 0, "on": [{"events": "wheel", "update": "invert('x', x())"}]},
      {"name": "zoom", "value": 1,
       "on": [{"events": "wheel!", "force": true, "update": "pow(1.001, event.deltaY * pow(16, event.deltaMode))"}]},
      {"name": "xdom", "update": "WHOLE",
       "on": [{"events": {"signal": "delta"},
               "update": "[xcur[0] + span(xcur) * delta[0] / width, xcur[1] + span(xcur) * delta[0] / width]"},
              {"events": {"signal": "zoom"},
               "update": "[anchor + (xdom[0] - anchor) * zoom, anchor + (xdom[1] - anchor) * zoom]"},
              {"events": "dblclick", "update": "WHOLE"}]}],
    "data": [{"name": "bars"}],
    "scales": [
      {"name": "x", "type": "linear", "domain": {"signal": "xdom"}, "range": "width", "nice": false, "zero": false},
      {"name": "y", "type": "band", "range": "height", "padding": 0.15},
      {"name": "color", "type": "ordinal"}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "seconds into the step", "grid": true},
             {"orient": "left", "scale": "y", "title": "stream"}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "bars"}, "clip": true,
       "encode": {"update": {
         "y": {"scale": "y", "field": "lane"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "field": "s"}, "x2": {"scale": "x", "field": "e"},
         "fill": {"scale": "color", "field": "pass"},
         "tooltip": {"signal": "{'pass': datum.pass, 'parts': datum.parts, 'start s': format(datum.s, '.4f'), 'end s': format(datum.e, '.4f'), 'kernels': datum.k, 'busy': format(datum.e > datum.s ? datum.busy / (datum.e - datum.s) : 1, '.0%')}"}}}}]
  })json";
  for (std::size_t at; (at = text.find("WHOLE")) != std::string::npos;)
    text.replace(at, 5, fmt::format("[0, {}]", end));
  Json spec = vega_spec(text, 1100, std::max(80, 80 * static_cast<int>(lanes.size())));
  spec["data"][0]["values"] = values;
  spec["scales"][1]["domain"] = string_list(lanes);
  spec["scales"][2]["domain"] = string_list(pass_order);
  spec["scales"][2]["range"] = string_list(pass_colors);
  return {
      "Pipeline timeline of the critical rank",
      fmt::format("Rank {}'s compute stream over the step, {} kernels drawn as {} bars: adjacent "
                  "kernels of one "
                  "pass and part merged, then the shortest gaps between bars of the same pass "
                  "closed, so that "
                  "bars are about chunks and the gaps left are idle time (pipeline bubble, exposed "
                  "communication, host-bound idle). Scroll over it to zoom, drag to pan, "
                  "double-click for the "
                  "whole step. Simulated with every microbatch and kept spans (as run --trace): "
                  "step {:.3f} s.",
                  step.critical_rank, kernels, bars.size(), step.step_time_s),
      spec};
}

std::string layout_text(const config::Scenario& sc) {
  const auto& par = sc.parallelism;
  std::string s = fmt::format("TP{} PP{}", par.tp, par.pp);
  if (par.vpp > 1) s += fmt::format(" VPP{}", par.vpp);
  if (par.ep > 1) s += fmt::format(" EP{}", par.ep);
  if (par.cp > 1) s += fmt::format(" CP{}", par.cp);
  s += fmt::format(" DP{}, {}, {} microbatches", par.dp,
                   schedules::schedule_names().name(sc.pipeline_schedule), par.num_microbatches);
  return s;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::vector<TimelineBar> timeline_bars(const schedules::StepResult& step, int rank,
                                       std::size_t max_bars) {
  enum Pass : int { kUnknown, kForward, kBackward, kOptimizer, kMixed };
  static const char* const kPassNames[] = {"other", "forward", "backward", "optimizer", "mixed"};
  const auto ends_with = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  std::vector<int> label_pass(step.labels.size(), kUnknown);
  std::vector<std::string_view> label_part(step.labels.size());
  for (std::size_t i = 0; i < step.labels.size(); ++i) {
    std::string_view name = step.labels[i];
    label_part[i] = name.substr(0, name.find('.'));
    if (name.rfind("optimizer", 0) == 0)
      label_pass[i] = kOptimizer;
    else if (ends_with(name, ".recompute") || name.find(".grad_quant") != std::string_view::npos)
      label_pass[i] = kBackward;
    else if (ends_with(name, ".fwd") || ends_with(name, ".fprop"))
      label_pass[i] = kForward;
    else if (ends_with(name, ".bwd") || ends_with(name, ".dgrad") || ends_with(name, ".wgrad"))
      label_pass[i] = kBackward;
  }

  struct Bar {
    int pass;
    double s, e, busy;
    std::int64_t kernels;
    std::vector<std::string_view> parts;
    bool more_parts = false;
  };
  const auto absorb = [](Bar& a, const Bar& b) {
    a.pass = a.pass == b.pass ? a.pass : kMixed;
    a.e = std::max(a.e, b.e);
    a.busy += b.busy;
    a.kernels += b.kernels;
    a.more_parts = a.more_parts || b.more_parts;
    for (const auto part : b.parts) {
      if (std::find(a.parts.begin(), a.parts.end(), part) != a.parts.end()) continue;
      if (a.parts.size() < 4)
        a.parts.push_back(part);
      else
        a.more_parts = true;
    }
  };

  std::vector<std::string> lane_names;
  std::vector<std::vector<Bar>> lanes;
  for (std::size_t t = 0; t < step.streams.size(); ++t) {
    if (step.streams[t].rfind("compute", 0) != 0) continue;
    std::vector<const schedules::TraceSpan*> spans;
    for (const auto& s : step.trace)
      if (s.rank == rank && s.track == static_cast<int>(t)) spans.push_back(&s);
    if (spans.empty()) continue;
    std::stable_sort(spans.begin(), spans.end(),
                     [](const auto* x, const auto* y) { return x->start_s < y->start_s; });
    // Kernels of no pass of their own (quantize, swizzle) take the previous kernel's, or
    // the first known one's before any.
    std::vector<int> pass(spans.size());
    int last = kUnknown;
    for (std::size_t i = 0; i < spans.size(); ++i) pass[i] = label_pass[spans[i]->label];
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (pass[i] == kUnknown)
        pass[i] = last;
      else
        last = pass[i];
    }
    for (std::size_t i = spans.size(); i-- > 0;) {
      if (pass[i] == kUnknown)
        pass[i] = last;
      else
        last = pass[i];
    }
    std::vector<Bar> bars;
    constexpr double kTouch_s = 1e-9;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const auto& s = *spans[i];
      const std::string_view part = label_part[s.label];
      if (!bars.empty() && bars.back().pass == pass[i] && bars.back().parts.front() == part &&
          s.start_s <= bars.back().e + kTouch_s) {
        bars.back().e = std::max(bars.back().e, s.end_s);
        bars.back().busy += s.end_s - s.start_s;
        ++bars.back().kernels;
        continue;
      }
      bars.push_back({pass[i], s.start_s, s.end_s, s.end_s - s.start_s, 1, {part}});
    }
    lane_names.push_back(step.streams[t]);
    lanes.push_back(std::move(bars));
  }

  // Closes the `count` smallest gaps between neighbours (of the same pass only, or any),
  // earlier ones first among equal gaps.
  const auto close_gaps = [&](std::size_t count, bool same_pass) {
    struct Gap {
      double seconds;
      std::size_t lane, index;
    };
    std::vector<Gap> gaps;
    for (std::size_t l = 0; l < lanes.size(); ++l)
      for (std::size_t i = 0; i + 1 < lanes[l].size(); ++i)
        if (!same_pass || lanes[l][i].pass == lanes[l][i + 1].pass)
          gaps.push_back({lanes[l][i + 1].s - lanes[l][i].e, l, i});
    std::stable_sort(gaps.begin(), gaps.end(),
                     [](const Gap& x, const Gap& y) { return x.seconds < y.seconds; });
    gaps.resize(std::min(gaps.size(), count));
    std::vector<std::vector<bool>> join(lanes.size());
    for (std::size_t l = 0; l < lanes.size(); ++l) join[l].assign(lanes[l].size(), false);
    for (const auto& g : gaps) join[g.lane][g.index] = true;
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      std::vector<Bar> merged;
      for (std::size_t i = 0; i < lanes[l].size(); ++i) {
        if (i > 0 && join[l][i - 1])
          absorb(merged.back(), lanes[l][i]);
        else
          merged.push_back(std::move(lanes[l][i]));
      }
      lanes[l] = std::move(merged);
    }
  };
  const auto total = [&] {
    std::size_t n = 0;
    for (const auto& l : lanes) n += l.size();
    return n;
  };
  if (total() > max_bars) close_gaps(total() - max_bars, true);
  if (total() > max_bars) close_gaps(total() - max_bars, false);

  std::vector<TimelineBar> out;
  for (std::size_t l = 0; l < lanes.size(); ++l)
    for (const auto& b : lanes[l]) {
      std::string parts;
      for (const auto part : b.parts) parts += (parts.empty() ? "" : ", ") + std::string(part);
      if (b.more_parts) parts += ", ...";
      out.push_back({lane_names[l], kPassNames[b.pass], parts, b.s, b.e, b.busy, b.kernels});
    }
  return out;
}

HtmlPage run_report(const config::Scenario& sc, const predict::Prediction& p,
                    const predict::Prediction& traced) {
  const Json j = run_json(sc, p);
  HtmlPage page;
  page.title = fmt::format("moesim report: {}", sc.name);
  page.subtitle = sc.description;
  page.facts = {{"scenario", sc.file},
                {"system", fmt::format("{}: {} x {}", sc.system.name, sc.gpus, sc.system.gpu.name)},
                {"layout", layout_text(sc)},
                {"step time", fmt::format("{:.3f} s", p.step.step_time_s)},
                {"TFLOPS/GPU", fmt::format("{:.1f} (Megatron accounting)", p.tflops_per_gpu)},
                {"tokens/s/GPU", fmt::format("{:.1f}", p.tokens_per_s_per_gpu)},
                {"MFU", fmt::format("{:.1f}% of dense BF16", 100 * p.mfu)},
                {"peak memory", fmt::format("{:.1f} GiB of {:g} GB ({})", p.peak_memory_gib,
                                            sc.system.gpu.hbm_GB.value,
                                            p.fits_in_memory ? "fits" : "does not fit")},
                {"critical rank", std::to_string(p.step.critical_rank)}};
  if (j.contains("measured")) {
    const auto& m = j["measured"];
    page.facts.emplace_back(
        "measured", fmt::format("{} {:g}, predicted {:.2f} ({:+.1f}%)",
                                m["metric"].get<std::string>(), m["value"].get<double>(),
                                m["predicted"].get<double>(), m["error_pct"].get<double>()));
  }
  page.charts.push_back(
      breakdown_chart({{fmt::format("rank {}", p.step.critical_rank), j["breakdown"]}},
                      "Breakdown of the critical rank's step",
                      fmt::format("What the critical rank's compute stream did over the {:.3f} s "
                                  "step: compute, exposed communication, "
                                  "the pipeline bubble split into the schedule's own (the same "
                                  "schedule with every chunk at this "
                                  "rank's mean time) and waiting on slower stages (stage "
                                  "imbalance), host-bound idle and other. "
                                  "Run --json: breakdown.",
                                  p.step.step_time_s)));
  page.charts.push_back(memory_chart(sc, p, j["peak_memory_parts_gib"]));
  page.charts.push_back(module_chart(j["compute_by_module"], j["host_bound_idle_by_module"]));
  std::size_t kernels = 0;
  for (const auto& s : traced.step.trace)
    if (s.rank == traced.step.critical_rank && s.track >= 0 &&
        traced.step.streams[static_cast<std::size_t>(s.track)].rfind("compute", 0) == 0)
      ++kernels;
  page.charts.push_back(timeline_chart(traced, kernels));
  return page;
}

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

  page.charts.push_back(breakdown_chart(
      {{"A: " + a.scenario.name, ja["breakdown"]}, {"B: " + b.scenario.name, jb["breakdown"]}},
      "Breakdowns side by side",
      fmt::format("Each side's critical rank (A: rank {}, B: rank {}), its step split as run "
                  "--json's breakdown.",
                  a.prediction.step.critical_rank, b.prediction.step.critical_rank)));

  // Contributions largest first, as diff_json orders them; terms below 0.1% of the larger
  // step summed into one bar, as `moesim diff` prints them.
  const double small = 1e-3 * std::max(ta, tb);
  Json values = Json::array();
  std::vector<std::string> terms;
  double rest = 0;
  int rest_n = 0;
  for (const auto& c : d["contributions"]) {
    const double delta = c["delta_s"].get<double>();
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
                      {"a", c["a_s"].get<double>()},
                      {"b", c["b_s"].get<double>()},
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
  Json spec = vega_spec(R"json({
    "data": [{"name": "terms"}],
    "scales": [
      {"name": "y", "type": "band", "range": "height", "padding": 0.2},
      {"name": "x", "type": "linear", "domain": {"data": "terms", "field": "delta"}, "range": "width", "nice": true,
       "zero": true, "padding": 64},
      {"name": "color", "type": "ordinal", "domain": ["adds time in B", "saves time in B"],
       "range": ["#e45756", "#54a24b"]}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "B - A, seconds of the step", "grid": true},
             {"orient": "left", "scale": "y"}],
    "legends": [{"fill": "color", "orient": "bottom", "direction": "horizontal"}],
    "marks": [
      {"type": "rect", "from": {"data": "terms"},
       "encode": {"enter": {
         "y": {"scale": "y", "field": "term"}, "height": {"scale": "y", "band": 1},
         "x": {"scale": "x", "value": 0}, "x2": {"scale": "x", "field": "delta"},
         "fill": {"scale": "color", "field": "effect"},
         "tooltip": {"signal": "{'term': datum.term, 'B - A s': format(datum.delta, '+.4f'), 'A s': datum.a == null ? '' : format(datum.a, '.4f'), 'B s': datum.b == null ? '' : format(datum.b, '.4f')}"}}}},
      {"type": "rule",
       "encode": {"enter": {"x": {"scale": "x", "value": 0}, "y": {"value": 0}, "y2": {"signal": "height"},
                            "stroke": {"value": "#333"}}}},
      {"type": "text", "from": {"data": "terms"},
       "encode": {"enter": {
         "x": {"scale": "x", "field": "delta", "offset": {"signal": "datum.delta > 0 ? 4 : -4"}},
         "y": {"scale": "y", "field": "term", "band": 0.5},
         "align": {"signal": "datum.delta > 0 ? 'left' : 'right'"}, "baseline": {"value": "middle"},
         "fill": {"value": "#222"}, "text": {"signal": "format(datum.delta, '+.3f') + ' s'"}}}}]
  })json",
                        800, std::max(60, 24 * static_cast<int>(terms.size())));
  spec["data"][0]["values"] = values;
  spec["scales"][0]["domain"] = string_list(terms);
  page.charts.push_back(
      {"Step-time difference by contribution",
       fmt::format(
           "B - A = {:+.3f} s, split into the critical ranks' breakdown terms (compute per module, "
           "exposed "
           "communication per kind, host-bound idle per module, the schedule's bubble, stage "
           "imbalance, "
           "other), largest first; they add up to the difference (residual {:.2g} s). Diff --json: "
           "contributions.",
           tb - ta, d["residual_s"].get<double>()),
       spec});
  return page;
}

HtmlPage validate_report(const std::vector<predict::ValidateRow>& rows, int skipped) {
  const predict::ValidateSummary sum = predict::summarize(rows);
  const auto& all = sum.all;
  const int failed = sum.failed;
  HtmlPage page;
  page.title = "moesim report: predicted against measured";
  page.subtitle =
      "The runs with a measured block under the given paths, as moesim validate evaluates them.";
  page.facts = {{"runs", std::to_string(rows.size())},
                {"mean absolute error", fmt::format("{:.2f}%", all.mae())},
                {"over tolerance", std::to_string(failed)}};
  if (all.worst)
    page.facts.emplace_back("worst",
                            fmt::format("{} ({:+.1f}%)", all.worst->name, all.worst->error_pct));
  if (skipped)
    page.facts.emplace_back("skipped", fmt::format("{} file(s) without a measured block", skipped));

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

HtmlPage sweep_report(const SweepCsv& csv, const std::string& file,
                      config::SweepObjective objective) {
  const auto& h = csv.header;
  const auto column = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    return it == h.end() ? h.size() : static_cast<std::size_t>(it - h.begin());
  };
  const std::string objective_name(config::sweep_objective_names().name(objective));
  const std::size_t status = column("status"), gpus = column("gpus"), obj = column(objective_name),
                    days = column("days"), gpu_hours = column("gpu_hours");
  if (status == h.size() || gpus == h.size())
    throw config::InputError(file, "line 1",
                             "no 'status' or 'gpus' column: not a CSV written by moesim sweep");
  if (obj == h.size())
    throw config::InputError(file, "line 1",
                             fmt::format("no '{}' column for the objective", objective_name));
  const bool budget = days < h.size() && gpu_hours < h.size();

  SweepSummaryInfo info;
  info.name = std::filesystem::path(file).stem().string();
  info.sweep_file = file;
  info.output = file;
  info.rows = static_cast<std::int64_t>(csv.rows.size());
  info.objective = objective;
  info.token_budget = budget;
  info.top = 1;
  const Json summary = sweep_summary_json(csv, info);
  std::set<std::int64_t> front;
  for (const auto& r : summary["pareto"]["rows"]) front.insert(r["id"].get<std::int64_t>());

  // The varied values: the columns between `id` and `status`.
  const auto varied = [&](const SweepCsv::Row& r) {
    std::string s;
    for (std::size_t c = 1; c < status && c < r.fields.size(); ++c) {
      const auto dot = h[c].rfind('.');
      s += fmt::format("{}{}={}", s.empty() ? "" : " ",
                       dot == std::string::npos ? h[c] : h[c].substr(dot + 1), r.fields[c]);
    }
    return s;
  };
  Json values = Json::array();
  double min_gpus = 0, max_gpus = 0;
  for (const auto& r : csv.rows) {
    if (status >= r.fields.size() || r.fields[status] != "ok") continue;
    const auto g = gpus < r.fields.size() ? parse_double(r.fields[gpus]) : std::nullopt;
    const auto y = obj < r.fields.size() ? parse_double(r.fields[obj]) : std::nullopt;
    if (!g || !y) continue;
    Json v{{"id", r.id},
           {"gpus", *g},
           {"y", *y},
           {"front", front.count(r.id) ? "Pareto front" : "other rows"},
           {"setting", varied(r)}};
    if (budget) {
      v["days"] = parse_double(r.fields[days]).value_or(0);
      v["gpu_hours"] = parse_double(r.fields[gpu_hours]).value_or(0);
    }
    values.push_back(v);
    min_gpus = min_gpus == 0 ? *g : std::min(min_gpus, *g);
    max_gpus = std::max(max_gpus, *g);
  }

  HtmlPage page;
  page.title = fmt::format("moesim report: sweep {}", info.name);
  page.subtitle = fmt::format("{} rows read from {}.", csv.rows.size(), file);
  std::string statuses;
  for (const auto& [s, n] : summary["status"].items())
    statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", n.get<std::int64_t>(), s);
  page.facts = {
      {"rows", statuses},
      {"objective", fmt::format("{} ({} is better)", objective_name,
                                config::higher_is_better(objective) ? "higher" : "lower")},
      {"Pareto front", fmt::format("{} row{}: {}", front.size(), front.size() == 1 ? "" : "s",
                                   budget ? "GPU-hours against days to train the token budget"
                                          : "cluster throughput (tokens/s) against GPUs")}};
  if (!summary["top"].empty()) {
    const auto& best = summary["top"][0];
    const auto& value = best[objective_name];
    page.facts.emplace_back(
        "best by the objective",
        fmt::format("row {}: {} = {}", best["id"].dump(), objective_name,
                    value.is_number() ? fmt::format("{:.6g}", value.get<double>()) : value.dump()));
  }

  const std::string tooltip = fmt::format(
      "{{'id': datum.id, 'GPUs': datum.gpus, '{}': format(datum.y, '.4~g'), 'settings': "
      "datum.setting, "
      "'Pareto front': datum.front == 'Pareto front' ? 'yes' : 'no'}}",
      objective_name);
  // Every ok row, the front's larger, red and labelled with its id.
  Json spec = vega_spec(R"json({
    "data": [
      {"name": "rows"},
      {"name": "front", "source": "rows", "transform": [{"type": "filter", "expr": "datum.front == 'Pareto front'"}]}],
    "scales": [
      {"name": "x", "range": "width"},
      {"name": "y", "type": "linear", "domain": {"data": "rows", "field": "y"}, "range": "height", "nice": true,
       "zero": false, "padding": 12},
      {"name": "front", "type": "ordinal", "domain": ["Pareto front", "other rows"], "range": ["#e45756", "#4c78a8"]}],
    "axes": [{"orient": "bottom", "scale": "x", "title": "GPUs (cluster size)", "grid": true},
             {"orient": "left", "scale": "y", "grid": true}],
    "legends": [{"fill": "front", "orient": "right"}],
    "marks": []
  })json",
                        800, 420);
  spec["data"][0]["values"] = values;
  // Cluster sizes over a wide range on a log2 axis.
  const bool log_x = min_gpus > 0 && max_gpus / min_gpus >= 4;
  Json& x = spec["scales"][0];
  if (log_x) {
    x.update({{"type", "log"},
              {"base", 2},
              {"domain", Json::array({min_gpus / 1.3, max_gpus * 1.3})},
              {"nice", false}});
    spec["axes"][0]["format"] = "d";
  } else {
    x.update({{"type", "linear"},
              {"domain", {{"data", "rows"}, {"field", "gpus"}}},
              {"nice", true},
              {"zero", false},
              {"padding", 24}});
  }
  spec["axes"][1]["title"] = objective_name;
  spec["marks"] = pareto_marks("gpus", "y", "'#' + datum.id", tooltip);
  page.charts.push_back(
      {fmt::format("{} against cluster size", objective_name),
       fmt::format(
           "Every simulated row (status ok) of the sweep; rows on the Pareto front ({}) in red "
           "with their ids.",
           budget ? "no other row needs both fewer GPU-hours and fewer days for the token budget"
                  : "no other row has both fewer GPUs and more tokens/s for the whole cluster"),
       spec});

  if (budget) {
    Json frontier = vega_spec(R"json({
      "data": [
        {"name": "rows"},
        {"name": "front", "source": "rows",
         "transform": [{"type": "filter", "expr": "datum.front == 'Pareto front'"},
                       {"type": "collect", "sort": {"field": "gpu_hours"}}]}],
      "scales": [
        {"name": "x", "type": "linear", "domain": {"data": "rows", "field": "gpu_hours"}, "range": "width",
         "nice": true, "zero": false, "padding": 12},
        {"name": "y", "type": "linear", "domain": {"data": "rows", "field": "days"}, "range": "height",
         "nice": true, "zero": false, "padding": 12},
        {"name": "front", "type": "ordinal", "domain": ["Pareto front", "other rows"],
         "range": ["#e45756", "#4c78a8"]}],
      "axes": [{"orient": "bottom", "scale": "x", "title": "GPU-hours for the token budget", "grid": true,
                "format": "~s"},
               {"orient": "left", "scale": "y", "title": "days to train the token budget", "grid": true}],
      "legends": [{"fill": "front", "orient": "right"}],
      "marks": [
        {"type": "line", "from": {"data": "front"},
         "encode": {"enter": {"x": {"scale": "x", "field": "gpu_hours"}, "y": {"scale": "y", "field": "days"},
                              "stroke": {"value": "#e45756"}, "strokeWidth": {"value": 2}}}}]
    })json",
                              800, 420);
    frontier["data"][0]["values"] = values;
    for (auto& m : pareto_marks("gpu_hours", "days", "'#' + datum.id + ' (' + datum.gpus + ' GPUs)'",
                                "{'id': datum.id, 'GPUs': datum.gpus, 'days': format(datum.days, '.1f'), "
                                "'GPU-hours': format(datum.gpu_hours, ',.0f'), 'settings': datum.setting}"))
      frontier["marks"].push_back(std::move(m));
    page.charts.push_back(
        {"Days against GPU-hours for the token budget",
         "The sweep's Pareto front as moesim sweep reports it: lower left is better on both; the "
         "red line joins the rows no other row beats in both.",
         frontier});
  }
  return page;
}

}  // namespace moesim::reports
