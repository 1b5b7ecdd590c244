// reports/sweep.cpp: `moesim sweep`'s CSV (reports/sweep.hpp): the columns, a row's fields
// and their JSON, reading rows back (resume, merge) and the Slurm job-array script. The
// summaries are sweep_summary.cpp's (a sweep's) and plan_summary.cpp's (a plan's).
#include "reports/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "config/json_reader.hpp"
#include "reports/sweep_detail.hpp"

namespace moesim::reports {
namespace detail {

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? header.size() : static_cast<std::size_t>(it - header.begin());
}

}  // namespace detail

namespace {

using detail::column;
using detail::parse_double;

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

std::optional<std::int64_t> parse_id(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
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
  r.wall_s = f[i].empty() ? 0 : number(f[i]);  // empty: written by --deterministic
  return r;
}

std::vector<std::string> without_wall_time(std::vector<std::string> fields) {
  if (!fields.empty()) fields.back().clear();
  return fields;
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
