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
#include <fmt/ranges.h>

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

std::vector<const SweepCsv::Row*> rows_by_id(const SweepCsv& csv) {
  std::vector<const SweepCsv::Row*> rows;
  for (const auto& r : csv.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto* a, const auto* b) { return a->id < b->id; });
  return rows;
}

}  // namespace detail

namespace {

using detail::column;
using detail::parse_double;

using Json = nlohmann::ordered_json;

// The result columns after the varied values and `id`, in order: each one's name and how a
// row's figure is written and read. `timing` figures exist where the row simulated
// (has_timing), `memory` ones where its memory was estimated (has_memory); `band` and
// `budget` ones are optional figures (the band's only with timing, the budget's only in a
// sweep or plan with a token budget).
struct ResultColumn {
  enum class Kind {
    status,
    message,
    predicted_with,
    caveats,
    timing,
    memory,
    fits,
    band,
    budget,
    wall
  };
  const char* name;
  Kind kind;
  double predict::SweepResult::*value = nullptr;                 // timing, memory, wall
  std::optional<double> predict::SweepResult::*maybe = nullptr;  // band, budget
};
using K = ResultColumn::Kind;
using R = predict::SweepResult;
const ResultColumn kResultColumns[] = {
    {"status", K::status},
    {"message", K::message},
    {"predicted_with", K::predicted_with},
    {"caveats", K::caveats},
    {"step_time_s", K::timing, &R::step_time_s},
    {"tflops_per_gpu", K::timing, &R::tflops_per_gpu},
    {"tokens_per_s_per_gpu", K::timing, &R::tokens_per_s_per_gpu},
    {"mfu", K::timing, &R::mfu},
    {"peak_memory_gib", K::memory, &R::peak_memory_gib},
    {"reserved_memory_gib", K::memory, &R::reserved_memory_gib},
    {"fits_in_memory", K::fits},
    {"breakdown.compute", K::timing, &R::compute_s},
    {"breakdown.exposed_communication", K::timing, &R::exposed_communication_s},
    {"breakdown.pipeline_bubble", K::timing, &R::pipeline_bubble_s},
    {"breakdown.host_bound_idle", K::timing, &R::host_bound_idle_s},
    {"breakdown.other", K::timing, &R::other_s},
    {"breakdown.schedule_bubble", K::timing, &R::schedule_bubble_s},
    {"breakdown.stage_imbalance", K::timing, &R::stage_imbalance_s},
    {"breakdown.straggler_wait", K::timing, &R::straggler_wait_s},
    {"goodput.ettr", K::timing, &R::ettr},
    {"band.step_time_lo_s", K::band, nullptr, &R::band_lo_s},
    {"band.step_time_hi_s", K::band, nullptr, &R::band_hi_s},
    {"days", K::budget, nullptr, &R::days},
    {"gpu_hours", K::budget, nullptr, &R::gpu_hours},
    {"days_with_goodput", K::budget, nullptr, &R::days_with_goodput},
    {"gpu_hours_with_goodput", K::budget, nullptr, &R::gpu_hours_with_goodput},
    {"energy_mwh", K::budget, nullptr, &R::energy_mwh},
    {"cost_usd", K::budget, nullptr, &R::cost_usd},
    {kSweepWallColumn, K::wall, &R::wall_s},
};

const ResultColumn* result_column(std::string_view name) {
  for (const auto& c : kResultColumns)
    if (name == c.name) return &c;
  return nullptr;
}

std::vector<std::string> result_columns(bool token_budget) {
  std::vector<std::string> c;
  for (const auto& col : kResultColumns)
    if (token_budget || col.kind != K::budget) c.emplace_back(col.name);
  return c;
}

// Shortest text that reads back to the same double (fmt's default for doubles).
std::string num(double v) {
  return fmt::format("{}", v);
}

// The caveats as one field, kSweepCaveatSeparator between them, and back.
std::string caveats_field(const std::vector<std::string>& caveats) {
  return fmt::format("{}", fmt::join(caveats, kSweepCaveatSeparator));
}
std::vector<std::string> caveats_from_field(const std::string& field) {
  std::vector<std::string> out;
  const std::string_view sep = kSweepCaveatSeparator;
  for (std::size_t at = 0; !field.empty();) {
    const std::size_t next = field.find(sep, at);
    out.push_back(field.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + sep.size();
  }
  return out;
}

// A row's figure in column `c` as its CSV field (empty where the row lacks it).
std::string figure_text(const ResultColumn& c, const predict::SweepResult& r) {
  switch (c.kind) {
    case K::status:
      return std::string(predict::sweep_status_names().name(r.status));
    case K::message:
      return r.message;
    case K::predicted_with:
      return r.predicted_with;
    case K::caveats:
      return caveats_field(r.caveats);
    case K::timing:
      return r.has_timing ? num(r.*c.value) : std::string();
    case K::memory:
      return r.has_memory ? num(r.*c.value) : std::string();
    case K::fits:
      return r.has_memory ? (r.fits_in_memory ? "true" : "false") : "";
    case K::band:
      return r.has_timing && r.*c.maybe ? num(*(r.*c.maybe)) : std::string();
    case K::budget:
      return r.*c.maybe ? num(*(r.*c.maybe)) : std::string();
    case K::wall:
      return fmt::format("{:.4f}", r.wall_s);
  }
  return "";
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

Json sweep_row_json(const std::vector<std::string>& header, const SweepCsv::Row& row) {
  const predict::SweepResult& r = row.result;
  Json j = Json::object();
  for (std::size_t i = 0; i < header.size() && i < row.fields.size(); ++i) {
    const std::string& name = header[i];
    const ResultColumn* c = result_column(name);
    if (!c) {
      j[name] = field_json(row.fields[i]);  // the id and the varied values, as written
      continue;
    }
    switch (c->kind) {
      case K::wall:
        break;
      case K::status:
        j[name] = predict::sweep_status_names().name(r.status);
        break;
      case K::message:
        j[name] = r.message;
        break;
      case K::predicted_with:
        j[name] = r.predicted_with;
        break;
      case K::caveats:
        j[name] = r.caveats;
        break;
      case K::fits:
        j[name] = r.has_memory ? Json(r.fits_in_memory) : Json(nullptr);
        break;
      default: {
        const auto v = sweep_figure(r, name);
        j[name] = v ? Json(*v) : Json(nullptr);
      }
    }
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
  for (const auto& c : kResultColumns)
    if (token_budget || c.kind != K::budget) f.push_back(figure_text(c, r));
  return f;
}

std::optional<double> sweep_figure(const predict::SweepResult& r, std::string_view column) {
  const ResultColumn* c = result_column(column);
  if (!c) return std::nullopt;
  switch (c->kind) {
    case K::timing:
      return r.has_timing ? std::optional(r.*c->value) : std::nullopt;
    case K::memory:
      return r.has_memory ? std::optional(r.*c->value) : std::nullopt;
    case K::band:
      return r.has_timing ? r.*c->maybe : std::nullopt;
    case K::budget:
      return r.*c->maybe;
    case K::wall:
      return r.wall_s;
    case K::status:
    case K::message:
    case K::predicted_with:
    case K::caveats:
    case K::fits:
      break;
  }
  return std::nullopt;
}

predict::SweepResult sweep_result_from_fields(const std::vector<std::string>& header,
                                              const std::vector<std::string>& f,
                                              const std::string& where) {
  if (f.size() != header.size())
    throw config::InputError(
        where, "",
        fmt::format("a row of {} fields where the header has {}", f.size(), header.size()));
  const auto number = [&](std::size_t i) {
    const auto v = parse_double(f[i]);
    if (!v || !std::isfinite(*v))
      throw config::InputError(where, header[i], fmt::format("'{}' is not a number", f[i]));
    return *v;
  };
  predict::SweepResult r;
  r.id = static_cast<std::int64_t>(number(0));
  // Figures are read where the row has them: timing where step_time_s is filled, memory
  // where peak_memory_gib is; then every figure of the kind must be a number.
  const std::size_t step = column(header, "step_time_s"), peak = column(header, "peak_memory_gib");
  r.has_timing = step < f.size() && !f[step].empty();
  r.has_memory = peak < f.size() && !f[peak].empty();
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "gpus") {
      if (!f[i].empty()) r.gpus = static_cast<std::int64_t>(number(i));
      continue;
    }
    const ResultColumn* c = result_column(header[i]);
    if (!c) continue;  // the id or a varied value
    switch (c->kind) {
      case K::status: {
        const auto status = predict::sweep_status_names().find(f[i]);
        if (!status) throw config::InputError(where, "", fmt::format("unknown status '{}'", f[i]));
        r.status = *status;
        break;
      }
      case K::message:
        r.message = f[i];
        break;
      case K::predicted_with:
        r.predicted_with = f[i];
        break;
      case K::caveats:
        r.caveats = caveats_from_field(f[i]);
        break;
      case K::timing:
        if (r.has_timing) r.*c->value = number(i);
        break;
      case K::memory:
        if (r.has_memory) r.*c->value = number(i);
        break;
      case K::fits:
        if (!r.has_memory) break;
        if (f[i] != "true" && f[i] != "false")
          throw config::InputError(where, header[i],
                                   fmt::format("'{}' is not true or false", f[i]));
        r.fits_in_memory = f[i] == "true";
        break;
      case K::band:
      case K::budget:
        if (!f[i].empty()) r.*c->maybe = number(i);
        break;
      case K::wall:
        r.wall_s = f[i].empty() ? 0 : number(i);  // empty: written by --deterministic
        break;
    }
  }
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
      if (column(csv.header, "status") == csv.header.size())
        bad("no 'status' column: not a CSV written by moesim sweep");
    } else {
      if (record.size() != csv.header.size())
        bad(fmt::format("{} fields where the header has {}", record.size(), csv.header.size()));
      const auto id = parse_id(record.front());
      if (!id) bad(fmt::format("id '{}' is not a row number", record.front()));
      auto result =
          sweep_result_from_fields(csv.header, record, fmt::format("{}: row {}", path, *id));
      csv.rows.push_back({*id, std::move(record), std::move(result)});
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

void check_predicted_with(const SweepCsv& csv, const std::string& path, const std::string& with,
                          const std::string& whose) {
  for (const auto& r : csv.rows)
    if (r.result.predicted_with != with)
      throw config::InputError(
          fmt::format("{}: row {}", path, r.id), "predicted_with",
          fmt::format("'{}', where {} '{}': predicted with other --uncalibrated, --headroom or "
                      "--set values; give the same ones, or remove the file",
                      r.result.predicted_with, whose, with));
}

std::string sweep_csv_text(const SweepCsv& csv) {
  std::string out = csv_line(csv.header);
  for (const auto* r : detail::rows_by_id(csv)) out += csv_line(r->fields);
  return out;
}

SweepMerge merge_sweep_csvs(const std::vector<std::string>& paths,
                            std::optional<std::int64_t> expected_rows) {
  SweepMerge m;
  std::map<std::int64_t, SweepCsv::Row> rows;
  std::size_t wall = 0;
  std::string with, with_where;  // the first row's predicted_with and where it is
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
    if (!c.rows.empty()) {
      if (with_where.empty()) {
        with = c.rows.front().result.predicted_with;
        with_where = fmt::format("{} row {} has", p, c.rows.front().id);
      }
      check_predicted_with(c, p, with, with_where);
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
