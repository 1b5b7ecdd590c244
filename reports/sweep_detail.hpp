// reports/sweep_detail.hpp (internal): what reports/sweep.cpp, sweep_summary.cpp and
// plan_summary.cpp share: reading a CSV row's fields (defined in sweep.cpp) and the ranking
// the sweep's and the plan's summaries are made of (defined in sweep_summary.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/sweep_file.hpp"
#include "predict/bands.hpp"
#include "reports/sweep.hpp"

namespace moesim::reports::detail {

// reports/sweep.cpp: a field as a double (nullopt unless the whole field is one), and a
// column's index in the header (header.size() when absent).
std::optional<double> parse_double(const std::string& s);
std::size_t column(const std::vector<std::string>& header, const std::string& name);
// The rows in id order (a CSV holds them in the order they finished until its sweep ends).
std::vector<const SweepCsv::Row*> rows_by_id(const SweepCsv& csv);

// reports/sweep_summary.cpp: the ok rows ranked by the objective and on the Pareto front.
struct Ranked {
  const SweepCsv::Row* row;
  double objective = 0, x = 0, y = 0;  // Pareto: minimise x, maximise y
};

struct Analysis {
  std::vector<std::pair<std::string, std::int64_t>> status;  // in the status table's order
  std::size_t sweep_statuses = 0;  // the first ones, which a sweep's rows take
  // The statuses a sweep's summary lists: its own, and a plan's only where rows have them.
  std::vector<std::pair<std::string, std::int64_t>> listed() const {
    std::vector<std::pair<std::string, std::int64_t>> v;
    for (std::size_t i = 0; i < status.size(); ++i)
      if (i < sweep_statuses || status[i].second > 0) v.push_back(status[i]);
    return v;
  }
  std::vector<Ranked> top, pareto;
  std::string x_name, y_name;
};
Analysis analyse(const SweepCsv& csv, const SweepSummaryInfo& info);
std::vector<std::size_t> table_columns(const std::vector<std::string>& h,
                                       const SweepSummaryInfo& info,
                                       const std::vector<std::string>& extra);
std::string rows_table(const SweepCsv& csv, const std::vector<Ranked>& rows,
                       const std::vector<std::size_t>& cols);
nlohmann::ordered_json row_json(const SweepCsv& csv, const SweepCsv::Row& r);
predict::Band gain_band(double gain_pct);
std::vector<bool> within_band_of_best(const Analysis& a, config::SweepObjective objective);
std::string within_band_text(const Analysis& a, config::SweepObjective objective);
// The combinations each layout rule drops (config::layout_rules, SweepPlan::pruned), as a
// sweep's and a plan's summaries list them: "rule n, rule n".
std::string pruned_text(const std::vector<std::pair<std::string, std::int64_t>>& pruned);
// How the rows were predicted (their predicted_with, one for all: resume and merge check it);
// empty without rows.
std::string predicted_with(const SweepCsv& csv);
// The summary's line for it, empty for the calibrated model as shipped: "predicted with: ...",
// and where a number is not the calibrated one, that the bands and the evidence behind gains
// describe the calibrated model.
std::string predicted_with_text(const SweepCsv& csv);
// The caveats of `rows` (in their order) with a prediction or a memory estimate (status ok or
// does_not_fit: their `caveats`, config::prediction_caveats), each once, in the order the rows
// first carry it, with the ids of the rows that do; `of` counts those rows. A sweep's summary
// takes all its rows by id, a plan's its top K.
struct RowsCaveat {
  std::string text;
  std::vector<std::int64_t> ids;
};
struct RowsCaveats {
  std::vector<RowsCaveat> caveats;
  std::int64_t of = 0;
};
RowsCaveats rows_caveats(const std::vector<const SweepCsv::Row*>& rows);
// Which rows carry a caveat, `ids` of the `of`: "every row", "rows 3, 4 (2 of 24)", "40 of 96
// rows (ids 0, 1, ...)".
std::string caveat_rows_text(const std::vector<std::int64_t>& ids, std::int64_t of);
// The summary's block of them, empty without: `heading` ("caveats"), " (priced beyond what was
// measured):", then each after its caveat_rows_text.
std::string rows_caveats_text(const RowsCaveats& caveats, const std::string& heading);
// Their JSON: [{"caveat", "rows" (how many), "of", "ids"}].
nlohmann::ordered_json rows_caveats_json(const RowsCaveats& caveats);

}  // namespace moesim::reports::detail
