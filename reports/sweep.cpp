#include "reports/sweep.hpp"

#include "predict/bands.hpp"
#include "reports/evidence.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/json_reader.hpp"

namespace moesim::reports {
namespace {

using Json = nlohmann::ordered_json;

// The result columns after the varied values and `id`.
std::vector<std::string> result_columns(bool token_budget) {
  std::vector<std::string> c = {"status",
                                "message",
                                "step_time_s",
                                "tflops_per_gpu",
                                "tokens_per_s_per_gpu",
                                "mfu",
                                "peak_memory_gib",
                                "reserved_memory_gib",
                                "fits_in_memory",
                                "breakdown.compute",
                                "breakdown.exposed_communication",
                                "breakdown.pipeline_bubble",
                                "breakdown.host_bound_idle",
                                "breakdown.other",
                                "breakdown.schedule_bubble",
                                "breakdown.stage_imbalance",
                                "breakdown.straggler_wait",
                                "goodput.ettr",
                                "band.step_time_lo_s",
                                "band.step_time_hi_s"};
  if (token_budget)
    c.insert(c.end(), {"days", "gpu_hours", "days_with_goodput", "gpu_hours_with_goodput",
                       "energy_mwh", "cost_usd"});
  c.push_back(kSweepWallColumn);
  return c;
}

// Shortest text that reads back to the same double (fmt's default for doubles).
std::string num(double v) {
  return fmt::format("{}", v);
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_id(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? header.size() : static_cast<std::size_t>(it - header.begin());
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::InputError(path, "", "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A field as a JSON value: numbers, booleans, lists and objects as themselves, the
// empty field as null, anything else as a string.
Json field_json(const std::string& s) {
  if (s.empty()) return nullptr;
  if (const auto d = parse_double(s)) {
    if (const auto i = parse_id(s)) return *i;
    return *d;
  }
  if (s == "true" || s == "false") return s == "true";
  if (s.front() == '[' || s.front() == '{') {
    try {
      return Json::parse(s);
    } catch (const Json::parse_error&) {
    }
  }
  return s;
}

}  // namespace

Json sweep_row_json(const std::vector<std::string>& header,
                    const std::vector<std::string>& fields) {
  static const std::vector<std::string> results = result_columns(true);
  Json j = Json::object();
  for (std::size_t i = 0; i < header.size() && i < fields.size(); ++i) {
    const std::string& c = header[i];
    if (c == kSweepWallColumn) continue;
    const bool figure = c != "status" && c != "message" && c != "fits_in_memory" &&
                        std::find(results.begin(), results.end(), c) != results.end();
    if (c == "message" || c == "status")
      j[c] = fields[i];
    else if (const auto d = figure ? parse_double(fields[i]) : std::nullopt)
      j[c] = *d;
    else
      j[c] = field_json(fields[i]);
  }
  return j;
}

std::vector<std::string> sweep_csv_header(const config::SweepPlan& plan, bool token_budget) {
  std::vector<std::string> h = {"id"};
  h.insert(h.end(), plan.columns.begin(), plan.columns.end());
  const auto r = result_columns(token_budget);
  h.insert(h.end(), r.begin(), r.end());
  return h;
}

std::vector<std::string> sweep_csv_fields(const config::SweepPoint& point,
                                          const predict::SweepResult& r, bool token_budget) {
  std::vector<std::string> f = {std::to_string(point.id)};
  f.insert(f.end(), point.values.begin(), point.values.end());
  // The loaded scenario's GPU count where the sweep file leaves it to the base.
  if (f[1].empty() && r.gpus > 0) f[1] = std::to_string(r.gpus);
  f.emplace_back(predict::sweep_status_names().name(r.status));
  f.push_back(r.message);
  const auto timing = [&](double v) { return r.has_timing ? num(v) : std::string(); };
  const auto memory = [&](double v) { return r.has_memory ? num(v) : std::string(); };
  f.push_back(timing(r.step_time_s));
  f.push_back(timing(r.tflops_per_gpu));
  f.push_back(timing(r.tokens_per_s_per_gpu));
  f.push_back(timing(r.mfu));
  f.push_back(memory(r.peak_memory_gib));
  f.push_back(memory(r.reserved_memory_gib));
  f.push_back(r.has_memory ? (r.fits_in_memory ? "true" : "false") : "");
  f.push_back(timing(r.compute_s));
  f.push_back(timing(r.exposed_communication_s));
  f.push_back(timing(r.pipeline_bubble_s));
  f.push_back(timing(r.host_bound_idle_s));
  f.push_back(timing(r.other_s));
  f.push_back(timing(r.schedule_bubble_s));
  f.push_back(timing(r.stage_imbalance_s));
  f.push_back(timing(r.straggler_wait_s));
  f.push_back(timing(r.ettr));
  for (const auto& v : {r.band_lo_s, r.band_hi_s}) f.push_back(r.has_timing && v ? num(*v) : "");
  if (token_budget) {
    for (const auto& v : {r.days, r.gpu_hours, r.days_with_goodput, r.gpu_hours_with_goodput,
                          r.energy_mwh, r.cost_usd})
      f.push_back(v ? num(*v) : "");
  }
  f.push_back(fmt::format("{:.4f}", r.wall_s));
  return f;
}

predict::SweepResult sweep_result_from_fields(const std::vector<std::string>& f,
                                              std::size_t value_columns, bool token_budget,
                                              const std::string& where) {
  const std::size_t figures = 2 + 4 + 3 + 8 + 1 + 2 + (token_budget ? 6 : 0) + 1;  // status .. wall
  if (f.size() != 1 + value_columns + figures)
    throw config::InputError(where, "",
                             fmt::format("a row of {} fields; this plan's rows have {}", f.size(),
                                         1 + value_columns + figures));
  predict::SweepResult r;
  static const std::vector<std::string> with_budget = result_columns(true),
                                        without = result_columns(false);
  const auto& names =
      token_budget ? with_budget : without;  // the result columns, as this row has them
  const auto number = [&](const std::string& s) {
    const auto v = parse_double(s);
    if (!v || !std::isfinite(*v)) {
      // The column: the id, a varied value, else a result column by its place after them
      // (every call passes an element of f).
      const auto at = static_cast<std::size_t>(&s - f.data());
      const std::string column = at == 0               ? "id"
                                 : at <= value_columns ? "a varied value"
                                 : at - 1 - value_columns < names.size()
                                     ? names[at - 1 - value_columns]
                                     : "?";
      throw config::InputError(where, column, fmt::format("'{}' is not a number", s));
    }
    return *v;
  };
  r.id = static_cast<std::int64_t>(number(f[0]));
  if (value_columns > 0 && !f[1].empty()) r.gpus = static_cast<std::int64_t>(number(f[1]));
  std::size_t i = 1 + value_columns;
  const auto status = predict::sweep_status_names().find(f[i]);
  if (!status) throw config::InputError(where, "", fmt::format("unknown status '{}'", f[i]));
  r.status = *status;
  r.message = f[i + 1];
  i += 2;
  r.has_timing = !f[i].empty();
  const auto timing = [&](double& v) {
    if (r.has_timing) v = number(f[i]);
    ++i;
  };
  timing(r.step_time_s);
  timing(r.tflops_per_gpu);
  timing(r.tokens_per_s_per_gpu);
  timing(r.mfu);
  r.has_memory = !f[i].empty();
  if (r.has_memory) {
    r.peak_memory_gib = number(f[i]);
    r.reserved_memory_gib = number(f[i + 1]);
    if (f[i + 2] != "true" && f[i + 2] != "false")
      throw config::InputError(where, "fits_in_memory",
                               fmt::format("'{}' is not true or false", f[i + 2]));
    r.fits_in_memory = f[i + 2] == "true";
  }
  i += 3;
  for (double* v :
       {&r.compute_s, &r.exposed_communication_s, &r.pipeline_bubble_s, &r.host_bound_idle_s,
        &r.other_s, &r.schedule_bubble_s, &r.stage_imbalance_s, &r.straggler_wait_s, &r.ettr})
    timing(*v);
  for (auto* v : {&r.band_lo_s, &r.band_hi_s}) {
    if (!f[i].empty()) *v = number(f[i]);
    ++i;
  }
  if (token_budget)
    for (auto* v : {&r.days, &r.gpu_hours, &r.days_with_goodput, &r.gpu_hours_with_goodput,
                    &r.energy_mwh, &r.cost_usd}) {
      if (!f[i].empty()) *v = number(f[i]);
      ++i;
    }
  r.wall_s = number(f[i]);
  return r;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const std::string& s = fields[i];
    if (s.find_first_of(",\"\n\r") == std::string::npos) {
      out += s;
      continue;
    }
    out += '"';
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    out += '"';
  }
  out += '\n';
  return out;
}

SweepCsv read_sweep_csv(const std::string& path) {
  const std::string text = read_all(path);
  SweepCsv csv;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, in_field = false;
  std::size_t line = 1, record_line = 1;
  const auto bad = [&](const std::string& what) {
    throw config::InputError(path, fmt::format("line {}", record_line), what);
  };
  const auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    if (csv.header.empty()) {
      csv.header = std::move(record);
      if (csv.header.empty() || csv.header.front() != "id")
        bad("not a moesim sweep CSV (the first column is not `id`)");
    } else {
      if (record.size() != csv.header.size())
        bad(fmt::format("{} fields where the header has {}", record.size(), csv.header.size()));
      const auto id = parse_id(record.front());
      if (!id) bad(fmt::format("id '{}' is not a row number", record.front()));
      csv.rows.push_back({*id, std::move(record)});
    }
    record.clear();
    in_field = false;
    record_line = line;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !in_field) {
      quoted = in_field = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      in_field = false;
    } else if (c == '\n') {
      ++line;
      end_record();
    } else if (c != '\r') {
      field += c;
      in_field = true;
    }
  }
  // Anything after the last line end is a record cut off while being written.
  csv.dropped_partial_line = !record.empty() || !field.empty() || quoted;
  if (csv.header.empty())
    throw config::InputError(path, "", "no header line: not a moesim sweep CSV");
  return csv;
}

std::string sweep_csv_text(const SweepCsv& csv) {
  std::vector<const SweepCsv::Row*> rows;
  for (const auto& r : csv.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto* a, const auto* b) { return a->id < b->id; });
  std::string out = csv_line(csv.header);
  for (const auto* r : rows) out += csv_line(r->fields);
  return out;
}

SweepMerge merge_sweep_csvs(const std::vector<std::string>& paths,
                            std::optional<std::int64_t> expected_rows) {
  SweepMerge m;
  std::map<std::int64_t, SweepCsv::Row> rows;
  std::size_t wall = 0;
  for (const auto& p : paths) {
    SweepCsv c = read_sweep_csv(p);
    m.dropped_partial_lines += c.dropped_partial_line ? 1 : 0;
    if (m.csv.header.empty()) {
      m.csv.header = c.header;
      wall = column(c.header, kSweepWallColumn);
    } else if (c.header != m.csv.header) {
      throw config::InputError(
          p, "line 1",
          fmt::format("the header differs from {}'s: the files come from different sweeps",
                      paths.front()));
    }
    for (auto& r : c.rows) {
      const auto [it, fresh] = rows.emplace(r.id, r);
      if (fresh) continue;
      m.duplicated.push_back(r.id);
      for (std::size_t i = 0; i < r.fields.size(); ++i)
        if (i != wall && r.fields[i] != it->second.fields[i]) {
          m.conflicting.push_back(r.id);
          break;
        }
    }
  }
  const auto sort_unique = [](std::vector<std::int64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  sort_unique(m.duplicated);
  sort_unique(m.conflicting);
  const std::int64_t end =
      expected_rows ? *expected_rows : (rows.empty() ? 0 : rows.rbegin()->first + 1);
  for (std::int64_t id = 0; id < end; ++id)
    if (!rows.count(id)) m.missing.push_back(id);
  for (auto& [id, r] : rows) m.csv.rows.push_back(std::move(r));
  return m;
}

namespace {

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

// The budget's columns: with goodput under a goodput objective.
std::string budget_days(const SweepSummaryInfo& info) {
  return config::with_goodput(info.objective) ? "days_with_goodput" : "days";
}
std::string budget_gpu_hours(const SweepSummaryInfo& info) {
  return config::with_goodput(info.objective) ? "gpu_hours_with_goodput" : "gpu_hours";
}

Analysis analyse(const SweepCsv& csv, const SweepSummaryInfo& info) {
  Analysis a;
  const auto& h = csv.header;
  const std::size_t status = column(h, "status"), gpus = column(h, "gpus"),
                    objective = column(
                        h, std::string(config::sweep_objective_names().name(info.objective))),
                    tokens = column(h, "tokens_per_s_per_gpu"), days = column(h, budget_days(info)),
                    gpu_hours = column(h, budget_gpu_hours(info));
  const auto value = [&](const SweepCsv::Row& r, std::size_t c) {
    return c < r.fields.size() ? parse_double(r.fields[c]) : std::nullopt;
  };
  for (const auto& s : predict::sweep_status_names().entries()) a.status.emplace_back(s.name, 0);
  a.sweep_statuses = 4;  // ok, invalid, does_not_fit, error; the others are plan's
  std::vector<Ranked> ok;
  for (const auto& r : csv.rows) {
    if (status >= r.fields.size()) continue;
    for (auto& [name, n] : a.status)
      if (name == r.fields[status]) ++n;
    if (r.fields[status] != "ok") continue;
    const auto o = value(r, objective);
    if (!o) continue;
    Ranked k{&r, *o, 0, 0};
    if (info.token_budget) {
      const auto gh = value(r, gpu_hours), d = value(r, days);
      if (!gh || !d) continue;
      k.x = *gh;
      k.y = -*d;
    } else {
      const auto g = value(r, gpus), t = value(r, tokens);
      if (!g || !t) continue;
      k.x = *g;
      k.y = *t * *g;
    }
    ok.push_back(k);
  }
  const bool higher = config::higher_is_better(info.objective);
  a.top = ok;
  std::stable_sort(a.top.begin(), a.top.end(), [&](const Ranked& p, const Ranked& q) {
    if (p.objective != q.objective)
      return higher ? p.objective > q.objective : p.objective < q.objective;
    return p.row->id < q.row->id;
  });
  if (a.top.size() > static_cast<std::size_t>(std::max(0, info.top)))
    a.top.resize(static_cast<std::size_t>(info.top));
  std::vector<Ranked> by_x = ok;
  std::stable_sort(by_x.begin(), by_x.end(), [](const Ranked& p, const Ranked& q) {
    if (p.x != q.x) return p.x < q.x;
    if (p.y != q.y) return p.y > q.y;
    return p.row->id < q.row->id;
  });
  for (const auto& k : by_x)
    if (a.pareto.empty() || k.y > a.pareto.back().y) a.pareto.push_back(k);
  a.x_name = info.token_budget ? budget_gpu_hours(info) : "gpus";
  a.y_name = info.token_budget ? budget_days(info) : "tokens_per_s";
  return a;
}

// The summary table's columns: id, the varied values, then the figures (and `extra`).
std::vector<std::size_t> table_columns(const std::vector<std::string>& h,
                                       const SweepSummaryInfo& info,
                                       const std::vector<std::string>& extra) {
  const std::size_t first_result = column(h, "status");
  std::vector<std::size_t> cols;
  for (std::size_t i = 1; i < first_result; ++i) cols.push_back(i);
  std::vector<std::string> figures = {"tokens_per_s_per_gpu", "tflops_per_gpu", "mfu",
                                      "step_time_s", "peak_memory_gib"};
  figures.push_back("goodput.ettr");
  if (info.token_budget) figures.insert(figures.end(), {budget_days(info), budget_gpu_hours(info)});
  if (info.objective == config::SweepObjective::energy_mwh ||
      info.objective == config::SweepObjective::cost_usd)
    figures.emplace_back(config::sweep_objective_names().name(info.objective));
  figures.insert(figures.end(), extra.begin(), extra.end());
  for (const auto& f : figures)
    if (column(h, f) < h.size()) cols.push_back(column(h, f));
  return cols;
}

// Ranked rows as an aligned text table of `cols`, headed by the columns' last path part.
std::string rows_table(const SweepCsv& csv, const std::vector<Ranked>& rows,
                       const std::vector<std::size_t>& cols) {
  const auto& h = csv.header;
  const std::size_t first_result = column(h, "status");
  const auto short_name = [](const std::string& path) {
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  };
  const auto cell = [&](const SweepCsv::Row& r, std::size_t c) {
    const std::string& s = r.fields[c];
    if (c >= first_result) {
      if (const auto d = parse_double(s)) {
        if (h[c] == "mfu") return fmt::format("{:.1f}%", 100 * *d);
        return std::abs(*d) >= 100 ? fmt::format("{:.0f}", *d) : fmt::format("{:.3g}", *d);
      }
    }
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
  };
  std::vector<std::size_t> width;
  width.push_back(2);
  for (const auto& r : rows) width[0] = std::max(width[0], std::to_string(r.row->id).size());
  for (std::size_t c : cols) {
    std::size_t w = short_name(h[c]).size();
    for (const auto& r : rows) w = std::max(w, cell(*r.row, c).size());
    width.push_back(w);
  }
  std::string t = fmt::format("  {:>{}}", "id", width[0]);
  for (std::size_t k = 0; k < cols.size(); ++k)
    t += fmt::format("  {:>{}}", short_name(h[cols[k]]), width[k + 1]);
  t += "\n";
  for (const auto& r : rows) {
    t += fmt::format("  {:>{}}", r.row->id, width[0]);
    for (std::size_t k = 0; k < cols.size(); ++k)
      t += fmt::format("  {:>{}}", cell(*r.row, cols[k]), width[k + 1]);
    t += "\n";
  }
  return t;
}

Json row_json(const SweepCsv& csv, const SweepCsv::Row& r) {
  return sweep_row_json(csv.header, r.fields);
}

}  // namespace

namespace {

// The band of a claimed gain over the scenario as given (predict/bands.hpp: the measured
// pairs' out-of-sample ratio errors on the ratio 1 + gain).
predict::Band gain_band(double gain_pct) {
  return predict::ratio_band(1 + gain_pct / 100, predict::corpus_pair_residuals());
}

// Claimed gains (predict::PlanEvidence) as the summary's JSON: claim_json's fields, the
// candidate's id, the columns that differ, the gain's 80% band and whether it reaches 0.
Json evidence_json(const std::vector<predict::PlanEvidence>& evidence) {
  Json out = Json::array();
  for (const auto& e : evidence) {
    Json x = claim_json(e.gain_pct, e.claim);
    x["id"] = e.id;
    x["columns"] = e.columns;
    if (const auto b = gain_band(e.gain_pct); b.pool > 0) {
      x["band_pct"] = {100 * (b.lo - 1), 100 * (b.hi - 1)};
      x["within_band"] = b.lo <= 1;
    }
    out.push_back(std::move(x));
  }
  return out;
}

// A priced budget's cost per million tokens.
double usd_per_million_tokens(double cost_usd, double token_budget) {
  return cost_usd / (token_budget / 1e6);
}

// The top candidates the model cannot order against the best: B / A's 80% ratio band (the
// pairs' out-of-sample ratio errors, predict/bands.hpp) around best / candidate reaches 1.
std::vector<bool> within_band_of_best(const Analysis& a, config::SweepObjective objective) {
  std::vector<bool> out;
  for (const auto& k : a.top) {
    const double best = a.top.front().objective, v = k.objective;
    if (!(best > 0) || !(v > 0)) {
      out.push_back(false);
      continue;
    }
    const double gain = 100 * (config::higher_is_better(objective) ? best / v - 1 : v / best - 1);
    const auto b = gain_band(gain);
    out.push_back(b.pool > 0 && b.lo <= 1);
  }
  return out;
}

// The line under a top table naming the rows within_band_of_best (the best aside).
std::string within_band_text(const Analysis& a, config::SweepObjective objective) {
  const auto within = within_band_of_best(a, objective);
  std::vector<std::int64_t> ids;
  for (std::size_t i = 1; i < a.top.size(); ++i)
    if (within[i]) ids.push_back(a.top[i].row->id);
  if (ids.empty()) return "";
  return fmt::format(
      "within the model's 80% band of the best (the measured pairs' out-of-sample ratio errors): "
      "ids {}; "
      "the model does not order them against it\n",
      fmt::join(ids, ", "));
}

}  // namespace

Json sweep_summary_json(const SweepCsv& csv, const SweepSummaryInfo& info) {
  const Analysis a = analyse(csv, info);
  Json pruned = Json::object();
  for (const auto& [rule, n] : info.pruned) pruned[rule] = n;
  Json status = Json::object();
  for (const auto& [s, n] : a.listed()) status[s] = n;
  Json top = Json::array(), front = Json::array();
  const auto within = within_band_of_best(a, info.objective);
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    Json r = row_json(csv, *a.top[i].row);
    r["within_band_of_best"] = within[i];
    top.push_back(std::move(r));
  }
  for (const auto& k : a.pareto) front.push_back(row_json(csv, *k.row));
  return Json{{"name", info.name},
              {"sweep_file", info.sweep_file},
              {"output", info.output},
              {"rows", info.rows},
              {"combinations", info.combinations},
              {"pruned_layouts", pruned},
              {"shard", {{"index", info.shard_index}, {"count", info.shard_count}}},
              {"rows_in_output", static_cast<std::int64_t>(csv.rows.size())},
              {"status", status},
              {"objective", config::sweep_objective_names().name(info.objective)},
              {"top", top},
              {"pareto", {{"x", a.x_name}, {"y", a.y_name}, {"rows", front}}}};
}

std::string sweep_summary_text(const SweepCsv& csv, const SweepSummaryInfo& info) {
  const Analysis a = analyse(csv, info);
  std::string o = fmt::format("sweep {} ({}): {} rows", info.name, info.sweep_file, info.rows);
  if (info.shard_count > 1) o += fmt::format(", shard {}/{}", info.shard_index, info.shard_count);
  o += fmt::format("; {} in {}:", csv.rows.size(), info.output);
  std::string sep = " ";
  for (const auto& [s, n] : a.listed()) {
    o += fmt::format("{}{} {}", sep, n, s);
    sep = ", ";
  }
  o += "\n";
  if (info.combinations > info.rows) {
    o += fmt::format("layouts: {} of {} combinations break a layout rule and are not rows:",
                     info.combinations - info.rows, info.combinations);
    sep = " ";
    for (const auto& [rule, n] : info.pruned) {
      o += fmt::format("{}{} {}", sep, rule, n);
      sep = ", ";
    }
    o += "\n";
  }
  const std::vector<std::size_t> cols = table_columns(csv.header, info, {});
  const std::string obj(config::sweep_objective_names().name(info.objective));
  if (a.pareto.empty()) {
    o += "no row simulated (status ok): nothing to rank\n";
    return o;
  }
  if (!a.top.empty()) {
    o += fmt::format("\ntop {} by {} ({} is better):\n", a.top.size(), obj,
                     config::higher_is_better(info.objective) ? "higher" : "lower");
    o += rows_table(csv, a.top, cols);
    o += within_band_text(a, info.objective);
  }
  o += info.token_budget ? "\nPareto front, GPU-hours against days to train the budget (neither "
                           "beaten by another row):\n"
                         : "\nPareto front, cluster throughput (tokens/s) against GPUs (more "
                           "throughput needs more GPUs):\n";
  o += rows_table(csv, a.pareto, cols);
  return o;
}

namespace {

// The breakdown a plan's top table adds to the figures.
const std::vector<std::string> kPlanBreakdown = {
    "breakdown.compute", "breakdown.exposed_communication", "breakdown.pipeline_bubble",
    "breakdown.host_bound_idle"};
std::int64_t status_count(const Analysis& a, std::string_view name) {
  for (const auto& [s, n] : a.status)
    if (s == name) return n;
  return 0;
}
}  // namespace

SweepCsv plan_csv(const predict::Plan& plan) {
  config::SweepPlan columns;
  columns.columns = plan.layouts.columns;
  for (const auto& d : plan.dims) columns.columns.push_back(d.path);
  const bool budget = plan.token_budget.has_value();
  SweepCsv csv{sweep_csv_header(columns, budget), {}, false};
  for (const auto& c : plan.outcome.candidates)
    csv.rows.push_back({c.point.id, sweep_csv_fields(c.point, c.row, budget)});
  return csv;
}

PlanSummaryInfo plan_summary_info(const predict::Plan& plan, const std::string& scenario_file,
                                  const std::string& output, int top) {
  const auto& o = plan.outcome;
  auto pruned = plan.layouts.pruned;
  for (auto& [rule, n] : pruned) n *= plan.per_layout;
  PlanSummaryInfo info{
      {plan.name, scenario_file, output, static_cast<std::int64_t>(o.candidates.size()),
       plan.layouts.combinations * plan.per_layout, pruned, 0, 1, plan.objective,
       plan.token_budget.has_value(), top},
      plan.gpus,
      o.layouts,
      o.layouts_expanded,
      o.simulated,
      o.bounded_unexpanded,
      o.violations,
      o.bound_wall_s,
      o.simulate_wall_s,
      plan.wall_s,
      {},
      std::nullopt,
      std::nullopt,
      true,
      o.reference_simulated,
      {}};
  info.smallest_fitting_gpus = plan.smallest_fitting_gpus;
  info.token_budget = plan.token_budget;
  info.fit_searched_to = plan.fit_searched_to;
  for (const auto& d : plan.dims) info.settings.push_back(d.path);
  for (const auto& c : o.candidates)
    if (c.bound &&
        (c.row.status == predict::SweepStatus::ok || c.row.status == predict::SweepStatus::error))
      info.bounds.emplace_back(c.point.id, *c.bound);
  if (plan.given) {
    info.given =
        sweep_csv_fields(plan.given->point, plan.given->row, plan.token_budget.has_value());
    info.given_rank = plan.given->rank;
    info.given_rank_exact = plan.given->rank_exact;
    info.given_evidence = plan.given->evidence;
  }
  info.runner_ups = plan.runner_ups;
  info.gpu = plan.gpu;
  return info;
}

Json plan_summary_json(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Analysis a = analyse(csv, info.sweep);
  Json pruned = Json::object();
  std::int64_t rule = 0;
  for (const auto& [r, n] : info.sweep.pruned) pruned[r] = n, rule += n;
  Json top = Json::array();
  const auto within = within_band_of_best(a, info.sweep.objective);
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    const auto& k = a.top[i];
    Json r = row_json(csv, *k.row);
    r["within_band_of_best"] = within[i];
    if (info.token_budget && r.contains("cost_usd") && r["cost_usd"].is_number())
      r["usd_per_million_tokens"] =
          usd_per_million_tokens(r["cost_usd"].get<double>(), *info.token_budget);
    top.push_back(std::move(r));
  }
  Json j{
      {"name", info.sweep.name},
      {"scenario", info.sweep.sweep_file},
      {"gpus", info.gpus},
      {"output", info.sweep.output},
      {"objective", config::sweep_objective_names().name(info.sweep.objective)},
      {"combinations", info.sweep.combinations},
      {"layouts", {{"kept", info.layouts}, {"expanded", info.layouts_expanded}}},
      {"settings", info.settings},
      {"evaluated", info.sweep.rows},
      {"simulated", info.simulated},
      {"fates",
       {{"rule", rule},
        {"invalid", status_count(a, "invalid")},
        {"memory", status_count(a, "does_not_fit")},
        {"duplicate", status_count(a, "duplicate")},
        {"dominated", status_count(a, "dominated")},
        {"bound", status_count(a, "bound") + info.bounded_unexpanded},
        {"simulated", status_count(a, "ok")},
        {"error", status_count(a, "error")}}},
      {"pruned_layouts", pruned},
      {"bound_violations", info.violations},
      {"top_exact", info.violations.empty() && status_count(a, "error") == 0},
      {"wall_s",
       {{"bound", info.bound_wall_s}, {"simulate", info.simulate_wall_s}, {"total", info.wall_s}}},
      {"top", top}};
  if (info.fit_searched_to > 0)
    j["smallest_fitting_gpus"] =
        info.smallest_fitting_gpus ? Json(*info.smallest_fitting_gpus) : Json(nullptr);
  if (info.given) {
    Json g = sweep_row_json(csv.header, *info.given);
    g.erase("id");
    g["rank"] = info.given_rank ? Json(*info.given_rank) : Json(nullptr);
    g["rank_exact"] = info.given_rank_exact;
    g["simulated_for_rank"] = info.given_simulated;
    g["evidence"] = evidence_json(info.given_evidence);
    j["given"] = std::move(g);
  }
  if (!info.runner_ups.empty() && !a.top.empty())
    j["winner"] = {{"id", a.top.front().row->id}, {"over", evidence_json(info.runner_ups)}};
  return j;
}

namespace {

// `plan --given`'s lines: the scenario as given, its figures, rank and distance to the best.
std::string given_text(const SweepCsv& csv, const PlanSummaryInfo& info, const Analysis& a) {
  const auto& h = csv.header;
  const auto& g = *info.given;
  const std::size_t first_result = column(h, "status");
  std::vector<std::string> set;
  for (std::size_t i = 2; i < first_result; ++i)  // past id and gpus
    if (!g[i].empty()) set.push_back(fmt::format("{} {}", h[i].substr(h[i].rfind('.') + 1), g[i]));
  std::string o = fmt::format("\nthe scenario as given ({}): ", fmt::join(set, ", "));
  const std::string status = g[column(h, "status")];
  if (status != "ok") return o + fmt::format("{}: {}\n", status, g[column(h, "message")]);
  const std::string obj(config::sweep_objective_names().name(info.sweep.objective));
  const auto value = parse_double(g[column(h, obj)]);
  o += fmt::format("{} {:.4g}, step {:.3g} s, {:.0f} TFLOPS/GPU, peak {:.1f} GiB", obj,
                   value.value_or(0), parse_double(g[column(h, "step_time_s")]).value_or(0),
                   parse_double(g[column(h, "tflops_per_gpu")]).value_or(0),
                   parse_double(g[column(h, "peak_memory_gib")]).value_or(0));
  if (info.given_rank && info.given_rank_exact)
    o += fmt::format("; rank {} (exact: every candidate whose bound beats it was simulated)",
                     *info.given_rank);
  else if (info.given_rank)
    o += fmt::format("; rank at least {} (the ranking stopped after {} simulations: --given-limit)",
                     *info.given_rank, info.given_simulated);
  if (value && !a.top.empty() && *value != 0)
    o += fmt::format("; the best: {} {:+.1f}%", obj, 100 * (a.top.front().objective / *value - 1));
  o += "\n";
  // What backs each claimed gain (config/decisions.hpp): the decisions behind it and the
  // what-if corpus's record on each.
  if (!info.given_evidence.empty())
    o += "evidence for the candidates above it (the what-if corpus's measured pairs per "
         "decision):\n";
  for (const auto& e : info.given_evidence) {
    o += fmt::format("  id {:<8} {:+6.1f}%  {}", e.id, e.gain_pct, claim_text(e.claim));
    if (const auto b = gain_band(e.gain_pct); b.pool > 0)
      o += fmt::format("; the model's {:.0f}% band {:+.1f}% to {:+.1f}%{}", 100 * b.level,
                       100 * (b.lo - 1), 100 * (b.hi - 1),
                       b.lo <= 1 ? ": within it of the scenario as given" : "");
    o += "\n";
  }
  return o;
}

}  // namespace

// 2213404.4 -> "2,213,404".
static std::string with_thousands(double v) {
  std::string d = fmt::format("{:.0f}", std::abs(v)), o;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) o += ',';
    o += d[i];
  }
  return (v < 0 ? "-" : "") + o;
}

// A row's number in the named column; nullopt where the column or the value is absent.
static std::optional<double> number_at(const SweepCsv& csv, const SweepCsv::Row& r,
                                       const std::string& name) {
  const std::size_t i = column(csv.header, name);
  return i < r.fields.size() ? parse_double(r.fields[i]) : std::nullopt;
}

// With a token budget: the best's days and, priced, its cost and cost per million tokens.
static std::string budget_text(const SweepCsv& csv, const PlanSummaryInfo& info,
                               const SweepCsv::Row& best) {
  if (!info.token_budget) return "";
  std::string o = fmt::format("the best (id {}) trains {:.3g} tokens", best.id, *info.token_budget);
  if (const auto d = number_at(csv, best, "days_with_goodput"))
    o += fmt::format(" in {:.1f} days", *d);
  if (const auto c = number_at(csv, best, "cost_usd"))
    o += fmt::format(" for ${} (${:.2f} per million tokens)", with_thousands(*c),
                     usd_per_million_tokens(*c, *info.token_budget));
  return o + "\n";
}

// Nothing fit (issue #45 item 4): the least memory a candidate needs, and the smallest
// cluster where one fits.
static std::string fit_text(const SweepCsv& csv, const PlanSummaryInfo& info) {
  if (info.fit_searched_to == 0) return "";
  std::string o;
  const std::size_t status = column(csv.header, "status");
  std::optional<std::pair<double, std::int64_t>> least;
  for (const auto& r : csv.rows)
    if (status < r.fields.size() && r.fields[status] == "does_not_fit")
      if (const auto m = number_at(csv, r, "peak_memory_gib"); m && (!least || *m < least->first))
        least = std::pair{*m, r.id};
  if (least)
    o += fmt::format(
        "nothing fits on {} GPUs: the least memory a candidate needs is {:.1f} GiB a GPU (id {})\n",
        info.gpus, least->first, least->second);
  o += info.smallest_fitting_gpus
           ? fmt::format(
                 "the smallest cluster where a candidate fits: {} GPUs (planned at 2, 4, ... times "
                 "{}; plan "
                 "again with --gpus {})\n",
                 *info.smallest_fitting_gpus, info.gpus, *info.smallest_fitting_gpus)
           : fmt::format(
                 "no candidate fits up to {} GPUs either: a larger system, offload or a shorter "
                 "sequence\n",
                 info.fit_searched_to);
  return o;
}

std::string plan_summary_text(const SweepCsv& csv, const PlanSummaryInfo& info) {
  const Analysis a = analyse(csv, info.sweep);
  std::int64_t rule = 0;
  for (const auto& [r, n] : info.sweep.pruned) rule += n;
  std::string o = fmt::format(
      "plan {} ({}) on {} GPUs: {} candidates ({} layouts kept by the rules x {} settings "
      "combinations",
      info.sweep.name, info.sweep.sweep_file, info.gpus, info.sweep.combinations, info.layouts,
      info.layouts > 0 ? (info.sweep.combinations - rule) / info.layouts : 0);
  o += info.settings.empty() ? ")\n" : fmt::format(" of {})\n", fmt::join(info.settings, ", "));
  o += fmt::format(
      "  {} break a layout rule, {} invalid, {} do not fit, {} duplicate (an inert setting), "
      "{} dominated (recompute more than a rung that fits), "
      "{} pruned by a bound ({} in {} layouts never expanded of {}), {} simulated",
      rule, status_count(a, "invalid"), status_count(a, "does_not_fit"),
      status_count(a, "duplicate"), status_count(a, "dominated"),
      status_count(a, "bound") + info.bounded_unexpanded, info.bounded_unexpanded,
      info.layouts - info.layouts_expanded, info.layouts, status_count(a, "ok"));
  if (const auto e = status_count(a, "error")) o += fmt::format(", {} failed", e);
  o += fmt::format(
      "\n  {:.1f} s (bounds {:.1f} s, simulations {:.1f} s); the {} evaluated candidates in {}\n",
      info.wall_s, info.bound_wall_s, info.simulate_wall_s, info.sweep.rows, info.sweep.output);
  if (!info.violations.empty())
    o += fmt::format(
        "warning: {} candidates beat a bound of theirs (ids {}): the top may not be exact; please "
        "report it\n",
        info.violations.size(), fmt::join(info.violations, ", "));
  if (a.top.empty())
    return o + "no candidate simulated (status ok): nothing to rank\n" + fit_text(csv, info);
  // Exact only while every bound held (predict/plan.hpp) and nothing failed unranked.
  const bool exact = info.violations.empty() && status_count(a, "error") == 0;
  o += fmt::format(
      "\ntop {} by {} ({} is better; {}):\n", a.top.size(),
      config::sweep_objective_names().name(info.sweep.objective),
      config::higher_is_better(info.sweep.objective) ? "higher" : "lower",
      exact ? "exact for the space"
            : "not shown exact: a bound failed or candidates failed unranked, see above");
  o += rows_table(csv, a.top, table_columns(csv.header, info.sweep, kPlanBreakdown));
  o += within_band_text(a, info.sweep.objective);
  o += budget_text(csv, info, *a.top.front().row);
  if (info.given) o += given_text(csv, info, a);
  return o;
}

std::string slurm_script(const std::string& moesim, const std::string& sweep_file,
                         const std::string& name, std::int64_t rows, int tasks,
                         const std::string& out_prefix, const std::string& options,
                         const SlurmResources& resources) {
  const auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string optional;
  for (const auto& [key, value] :
       {std::pair{"partition", &resources.partition}, std::pair{"time", &resources.time},
        std::pair{"account", &resources.account}})
    if (!value->empty()) optional += fmt::format("#SBATCH --{}={}\n", key, *value);
  return fmt::format(
      "#!/bin/bash\n"
      "# moesim sweep {name}: {rows} rows in {tasks} array tasks. Each task runs the shard\n"
      "# (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP of "
      "SLURM_ARRAY_TASK_COUNT\n"
      "# on all its CPUs and resumes its own CSV when requeued or submitted again. moesim is\n"
      "# exec'd: Slurm's SIGTERM (time limit, preemption, scancel) reaches it, and it writes the\n"
      "# rows in flight before it exits.\n"
      "#SBATCH --job-name=moesim-sweep-{name}\n"
      "#SBATCH --array=0-{last}\n"
      "#SBATCH --nodes=1\n"
      "#SBATCH --ntasks=1\n"
      "#SBATCH --cpus-per-task={cpus}\n"
      "{optional}"
      "#SBATCH --output={prefix}_%a.log\n"
      "#SBATCH --requeue\n"
      "set -euo pipefail\n"
      "exec {moesim} sweep {sweep} -o {prefix_q}_${{SLURM_ARRAY_TASK_ID}}.csv --resume --jobs "
      "\"${{SLURM_CPUS_PER_TASK:-0}}\"{options}\n"
      "# When every task has finished:\n"
      "#   {moesim} sweep merge {prefix_q}_*.csv --sweep {sweep} -o {prefix_q}.csv\n",
      fmt::arg("name", name), fmt::arg("rows", rows), fmt::arg("tasks", tasks),
      fmt::arg("last", tasks - 1), fmt::arg("cpus", resources.cpus_per_task),
      fmt::arg("optional", optional), fmt::arg("prefix", out_prefix),
      fmt::arg("prefix_q", quote(out_prefix)), fmt::arg("moesim", quote(moesim)),
      fmt::arg("sweep", quote(sweep_file)), fmt::arg("options", options));
}

}  // namespace moesim::reports
