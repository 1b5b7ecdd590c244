// reports/report_charts.hpp: what the pages of `moesim report` (reports/report.hpp) share:
// the Vega spec's common frame, horizontal bars of seconds stacked by part, the breakdown
// chart (run, diff and plan pages) and its categories, a CSV field read as a number and the
// "predicted with" fact (sweep and plan pages). Internal to reports/report_*.cpp; each page's
// own charts live in its file (report_run.cpp, report_diff.cpp, report_validate.cpp,
// report_sweep.cpp, report_plan.cpp).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/html.hpp"

namespace moesim::reports::charts {

using Json = nlohmann::ordered_json;

// A category of a stacked chart: its key in `run --json`, legend label and colours.
struct Category {
  const char* key;
  const char* label;
  const char* color;
  const char* ink;  // text on the color
};

Json string_list(const std::vector<std::string>& v);

// A sweep's or plan's summary JSON's `predicted_with` as the page's fact "predicted with", unless
// the rows are the calibrated model as shipped.
void add_predicted_with_fact(HtmlPage& page, const Json& summary);
// A sweep's or plan's summary JSON's `caveats` (what its rows' predictions are priced beyond) as
// facts "caveat of <rows>", as the summary's text lists them.
void add_caveat_facts(HtmlPage& page, const Json& summary);

// A Vega spec from its text, with the size and style every chart shares; the caller
// fills in the data and what depends on it (scale domains, colours).
Json vega_spec(std::string_view text, int width, int height);

// Horizontal bars of seconds of the step, one per value of `group` (in `groups` order),
// each stacked by its rows' "order" and coloured by `colour` (`domain` -> `range`); the
// data set is "table", the scales "y", "x" and "color".
Json stacked_seconds_spec(const std::string& group, const std::string& colour,
                          const std::string& tooltip, double band_padding, int height, Json values,
                          const std::vector<std::string>& groups,
                          const std::vector<std::string>& domain,
                          const std::vector<std::string>& range);

// Horizontal bars of differences B - A, one per term in `terms` order: `values` rows
// {term, delta, a, b (null for a sum of terms), effect: `adds` or `saves`}, red where B
// adds time, green where it saves; each bar's value written beside it in `unit_text`, the
// tooltip's in `unit_tip`.
Json delta_bars_spec(Json values, const std::vector<std::string>& terms,
                     const std::string& axis_title, const std::string& adds,
                     const std::string& saves, const std::string& unit_tip,
                     const std::string& unit_text);

// The breakdown's categories (run --json's keys), in the charts' order.
std::span<const Category> breakdown_categories();

// Horizontal stacked bars of the breakdown, one per run (label -> run --json "breakdown"):
// the critical rank's step by category, the pipeline bubble split into the schedule's own
// and stage imbalance (they add up to the step time).
HtmlChart breakdown_chart(const std::vector<std::pair<std::string, Json>>& runs,
                          const std::string& title, const std::string& caption);

}  // namespace moesim::reports::charts
