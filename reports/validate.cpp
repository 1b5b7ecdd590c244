#include "reports/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "config/decisions.hpp"
#include "config/scenario.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/json_reader.hpp"
#include "reports/html.hpp"  // html_escape: XML attribute and text escapes alike
#include "reports/text.hpp"

namespace moesim::reports {
namespace {

// Markdown text (no code spans): punctuation that would start markup backslash-escaped.
std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (std::string_view("\\`*_[]<>|#").find(c) != std::string_view::npos) o += '\\';
    o += c;
  }
  return o;
}

// XML 1.0 text: characters it forbids (controls other than tab, line feed, carriage
// return) replaced by '?', then escaped.
std::string xml_text(const std::string& s) {
  std::string o = s;
  for (char& c : o)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') c = '?';
  return html_escape(o);
}

std::string figures(const predict::ValidateRow& r) {
  return fmt::format("{}: predicted {:.4g}, measured {:.4g} ({:+.1f}%, tolerance {:g}%)", r.metric,
                     r.predicted, r.measured, r.error_pct, r.tolerance_pct);
}

}  // namespace

namespace {
// Row i's move against the baseline, when it was compared and moved beyond the tolerance
// (compare_baseline lists the rows' moves first, in row order).
const BaselineMove* drift(const BaselineCheck* moved, std::size_t i) {
  if (!moved || i >= moved->moves.size() || !moved->moves[i].flagged) return nullptr;
  return &moved->moves[i];
}
std::string drift_text(const BaselineMove& m, double tolerance_pct) {
  return fmt::format("predicted {:.4g}, {:.4g} in the baseline: moved {:+.2f}% (more than {:g}%)",
                     *m.after, *m.before, m.moved_pct, tolerance_pct);
}
}  // namespace

namespace {
std::string prediction_figures(const predict::PredictionRow& r) {
  return fmt::format("step_time_s: predicted {:.4g} (no measurement; watched against the baseline)",
                     r.step_time_s);
}
}  // namespace

std::string validate_junit(const std::vector<predict::ValidateRow>& rows,
                           const predict::ValidateSummary& sum, const ValidateExtras& x) {
  const BaselineCheck* moved = x.moved ? &*x.moved : nullptr;
  const auto& pairs = sum.compared.pairs;
  const std::size_t n = rows.size(), cases = n + x.predictions.size() + pairs.size();
  int failures = sum.pairs_failed;
  const auto wall = [&](double s) {
    return x.timings ? s : 0.0;
  };  // time="0.000" under --deterministic
  double time = 0;
  for (std::size_t i = 0; i < n; ++i)
    failures += rows[i].ok && !drift(moved, i) ? 0 : 1, time += wall(rows[i].wall_s);
  for (std::size_t k = 0; k < x.predictions.size(); ++k)
    failures += drift(moved, n + k) ? 1 : 0, time += wall(x.predictions[k].wall_s);
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format(
      "<testsuites name=\"moesim validate\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n", cases,
      failures, time);
  o += fmt::format(
      "  <testsuite name=\"moesim validate\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
      "skipped=\"0\" "
      "time=\"{:.3f}\">\n",
      cases, failures, time);
  o += fmt::format(
      "    <properties><property name=\"files_without_measured\" value=\"{}\"/>"
      "<property name=\"predictions_only\" value=\"{}\"/></properties>\n",
      x.skipped, x.predictions.size());
  // One test case: its figures, or a failure of `type` with `why`.
  const auto testcase = [&](const std::string& classname, const std::string& name,
                            const std::string& file, double wall_s, const std::string& figures_text,
                            const char* type, const std::string& why) {
    o += fmt::format("    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3f}\">",
                     xml_text(classname), xml_text(name), xml_text(file), wall_s);
    if (type)
      o += fmt::format("\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    ",
                       xml_text(why), type, xml_text(file + ": " + why));
    else
      o += fmt::format("<system-out>{}</system-out>", xml_text(figures_text));
    o += "</testcase>\n";
  };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& r = rows[i];
    const BaselineMove* m = drift(moved, i);
    const char* type = !r.ok ? "beyond tolerance" : m ? "moved against the baseline" : nullptr;
    testcase("moesim.validate." + r.system, r.name, r.file, wall(r.wall_s), figures(r), type,
             !r.ok ? figures(r)
             : m   ? drift_text(*m, x.tolerance_pct)
                   : "");
  }
  for (std::size_t k = 0; k < x.predictions.size(); ++k) {
    const auto& r = x.predictions[k];
    const BaselineMove* m = drift(moved, n + k);
    testcase("moesim.predict." + r.system, r.name, r.file, wall(r.wall_s), prediction_figures(r),
             m ? "moved against the baseline" : nullptr, m ? drift_text(*m, x.tolerance_pct) : "");
  }
  for (const auto& p : pairs) {
    const std::string fig = fmt::format(
        "per-GPU throughput B/A: predicted {:.4f}, measured {:.4f} ({:+.1f}%, "
        "tolerance {:g}%{})",
        p.predicted_ratio, p.measured_ratio, p.ratio_error_pct, p.tolerance_pct,
        p.direction_right ? "" : "; wrong direction");
    testcase(fmt::format("moesim.pair.{}", config::decision_names().name(p.decision)), p.name,
             p.b->file, 0, fig, p.ok ? nullptr : "beyond tolerance", fig);
  }
  o += "  </testsuite>\n</testsuites>\n";
  return o;
}

std::string validate_markdown(const std::vector<predict::ValidateRow>& rows,
                              const predict::ValidateSummary& sum, const ValidateExtras& x) {
  const BaselineCheck* moved = x.moved ? &*x.moved : nullptr;
  const auto& [all, memory, timing_failed, memory_failed] =
      std::tie(sum.all, sum.memory, sum.timing_failed, sum.memory_failed);
  std::string o = "## moesim validate\n\n";
  o += fmt::format("{}, mean absolute error **{:.2f}%**, {} beyond tolerance",
                   counted(all.runs, "run"), all.mae(), timing_failed);
  if (!x.predictions.empty())
    o += fmt::format("; {} without a measurement predicted",
                     counted(x.predictions.size(), "scenario"));
  if (x.skipped)
    o += fmt::format("; {} without a measured block skipped", counted(x.skipped, "file"));
  o += ".";
  if (all.worst)
    o += fmt::format(" Worst: {} ({:+.1f}%).", md_escape(all.worst->name), all.worst->error_pct);
  if (memory.runs)
    o += fmt::format(" Memory: {}, mean absolute error **{:.2f}%**, {} beyond tolerance.",
                     counted(memory.runs, "point"), memory.mae(), memory_failed);
  if (moved)
    o += fmt::format(" Against the baseline: {} moved more than {:g}%.",
                     counted(moved->flagged, "prediction"), x.tolerance_pct);
  o += "\n\n| scenario | system | dispatcher | metric | measured | predicted | error | tolerance | "
       "|\n"
       "|---|---|---|---|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::string status = r.ok ? "ok" : "**over**";
    if (const BaselineMove* m = drift(moved, i))
      status += fmt::format(", **moved {:+.2f}%**", m->moved_pct);
    o += fmt::format("| {} | {} | {} | {} | {:.4g} | {:.4g} | {:+.1f}% | {:g}% | {} |\n",
                     md_escape(r.name), md_escape(r.system), md_escape(r.dispatcher), r.metric,
                     r.measured, r.predicted, r.error_pct, r.tolerance_pct, status);
  }
  if (!x.predictions.empty()) {
    o += "\n| scenario without a measurement | system | step time | TFLOPS/GPU | peak memory | |\n"
         "|---|---|---:|---:|---:|---|\n";
    for (std::size_t k = 0; k < x.predictions.size(); ++k) {
      const auto& r = x.predictions[k];
      const BaselineMove* m = drift(moved, rows.size() + k);
      o += fmt::format("| {} | {} | {:.4g} s | {:.1f} | {:.1f} GiB | {} |\n", md_escape(r.name),
                       md_escape(r.system), r.step_time_s, r.tflops_per_gpu, r.peak_memory_gib,
                       m ? fmt::format("**moved {:+.2f}%**", m->moved_pct) : std::string("ok"));
    }
  }
  if (all.runs > 1)
    for (const auto& g : sum.groupings()) {
      o += fmt::format("\n| {} | runs | mean absolute error | speed bias |\n|---|---:|---:|---:|\n",
                       g.label);
      for (const auto& [k, v] : *g.groups)
        o += fmt::format("| {} | {} | {:.2f}% | {:+.1f}% |\n", md_escape(k), v.runs, v.mae(),
                         v.speed_bias());
    }
  const auto& pairs = sum.compared.pairs;
  if (!pairs.empty()) {
    o += fmt::format(
        "\n{}, mean absolute ratio error **{:.2f}%**, {} among {} with a "
        "measured difference over {:g}%, {} beyond tolerance.\n",
        counted(sum.pairs_all.pairs, "pair"), sum.pairs_all.mae(),
        counted(sum.pairs_all.wrong_direction, "wrong direction"), sum.pairs_all.significant,
        100 * predict::kPairSignificantRatio, sum.pairs_failed);
    o += "\n| pair (B vs A) | decision | measured B/A | predicted B/A | ratio error | tolerance | "
         "|\n"
         "|---|---|---:|---:|---:|---:|---|\n";
    for (const auto& p : pairs)
      o += fmt::format("| {} | {} | {:.4f} | {:.4f} | {:+.1f}% | {:g}% | {}{} |\n",
                       md_escape(p.name), config::decision_names().name(p.decision),
                       p.measured_ratio, p.predicted_ratio, p.ratio_error_pct, p.tolerance_pct,
                       p.ok ? "ok" : "**over**", p.direction_right ? "" : ", **wrong direction**");
  }
  for (const auto& f : sum.compared.families)
    o += fmt::format(
        "\nFamily {}: {} members, Kendall's tau {:+.2f}, {} of {} pairs ordered right, regret of "
        "the "
        "predicted best ({}) {:.1f}%.\n",
        md_escape(f.name), f.members.size(), f.kendall_tau, f.pairs_ordered_right, f.pairs,
        md_escape(f.predicted_best->name), f.regret_pct);
  return o;
}

std::vector<BaselineRow> read_baseline(const nlohmann::json& baseline, const std::string& file) {
  if (!baseline.is_object() || !baseline.contains("rows") || !baseline["rows"].is_array())
    throw config::InputError(
        file, "rows", "expected the output of `moesim validate --json` (an object with rows)");
  std::vector<BaselineRow> prev;
  // `rows` carry the measured metric's prediction, `predictions` the step time.
  for (const auto& [key, field, measured] :
       {std::tuple{"rows", "predicted", true}, std::tuple{"predictions", "step_time_s", false}}) {
    if (!baseline.contains(key)) continue;
    if (!baseline[key].is_array()) throw config::InputError(file, key, "expected an array");
    for (std::size_t i = 0; i < baseline[key].size(); ++i) {
      const auto& r = baseline[key][i];
      if (!r.is_object() || !r.contains(field) || !r[field].is_number() || !r.contains("name") ||
          !r["name"].is_string())
        throw config::InputError(file, fmt::format("{}[{}]", key, i),
                                 fmt::format("expected a row with name and {}", field));
      prev.push_back({r["name"].get<std::string>(), r.value("file", std::string()),
                      r[field].get<double>(), measured});
    }
  }
  return prev;
}

BaselineCheck compare_baseline(const std::vector<predict::ValidateRow>& rows,
                               const std::vector<predict::PredictionRow>& predictions,
                               const std::vector<BaselineRow>& baseline, double tolerance_pct) {
  std::vector<std::pair<const BaselineRow*, bool>> prev;  // the row, matched yet
  for (const auto& b : baseline) prev.emplace_back(&b, false);
  BaselineCheck c;
  const auto compare = [&](const std::string& name, const std::string& file, double predicted,
                           bool measured) {
    BaselineMove m{name, file, std::nullopt, predicted, 0, false, measured};
    using Entry = std::pair<const BaselineRow*, bool>;
    const auto free_of_kind = [&](const Entry& p) {
      return !p.second && p.first->measured == measured;
    };
    auto it = std::find_if(prev.begin(), prev.end(), [&](const Entry& p) {
      return free_of_kind(p) && p.first->file == file;
    });
    if (it == prev.end())
      it = std::find_if(prev.begin(), prev.end(),
                        [&](const Entry& p) { return free_of_kind(p) && p.first->name == name; });
    if (it != prev.end()) {
      it->second = true;
      const double before = it->first->predicted;
      m.before = before;
      if (before != 0) {
        m.moved_pct = 100 * (predicted - before) / before;
        m.flagged = std::abs(m.moved_pct) > tolerance_pct;
      } else {  // from 0: any change is a move
        m.moved_pct = predicted == 0 ? 0 : std::copysign(100.0, predicted);
        m.flagged = predicted != 0;
      }
    }
    c.flagged += m.flagged ? 1 : 0;
    c.moves.push_back(m);
  };
  for (const auto& r : rows) compare(r.name, r.file, r.predicted, true);
  for (const auto& r : predictions) compare(r.name, r.file, r.step_time_s, false);
  for (const auto& [b, used] : prev)
    if (!used)
      c.moves.push_back({b->name, b->file, b->predicted, std::nullopt, 0, false, b->measured});
  return c;
}

std::string baseline_text(const BaselineCheck& c, double tolerance_pct) {
  std::string o = fmt::format("against the baseline: {} moved more than {:g}%\n",
                              counted(c.flagged, "prediction"), tolerance_pct);
  for (const auto& m : c.moves) {
    if (m.flagged)
      o += fmt::format("  MOVED {:<44} {:.4g} -> {:.4g} ({:+.2f}%)\n", m.name, *m.before, *m.after,
                       m.moved_pct);
    else if (!m.before)
      o += fmt::format("  new   {:<44} (not in the baseline)\n", m.name);
    else if (!m.after)
      o += fmt::format("  gone  {:<44} (in the baseline, not validated now)\n", m.name);
  }
  return o;
}

nlohmann::ordered_json baseline_json(const BaselineCheck& c, double tolerance_pct) {
  nlohmann::ordered_json moves = nlohmann::ordered_json::array();
  for (const auto& m : c.moves)
    moves.push_back({{"name", m.name},
                     {"file", m.file},
                     {"before", m.before ? nlohmann::ordered_json(*m.before) : nullptr},
                     {"after", m.after ? nlohmann::ordered_json(*m.after) : nullptr},
                     {"moved_pct", m.moved_pct},
                     {"flagged", m.flagged},
                     {"measured", m.measured}});
  return {{"tolerance_pct", tolerance_pct}, {"flagged", c.flagged}, {"moves", moves}};
}

namespace {
std::string series_text(const predict::SeriesFit& f) {
  std::string out = fmt::format("\nseries {} ({})\n{:>7} {:>5} {:>10} {:>10} {:>8}   {:>24}\n",
                                f.name, counted(f.sizes.size(), "size"), "GPUs", "GA", "measured",
                                "predicted", "error", "per-GPU vs previous: m / p");
  for (std::size_t i = 0; i < f.sizes.size(); ++i) {
    const auto& r = *f.sizes[i];
    out += fmt::format("{:>7} {:>5} {:>9.3f}s {:>9.3f}s {:>+7.1f}%", r.gpus, r.microbatches,
                       r.measured_step_s, r.predicted_step_s,
                       100 * (r.predicted_step_s / r.measured_step_s - 1));
    if (i > 0)
      out += fmt::format("   {:>7.4f} / {:.4f} ({:+.1f}%)", f.ratio_measured[i - 1],
                         f.ratio_predicted[i - 1], f.ratio_error_pct[i - 1]);
    out += "\n";
  }
  if (f.fitted)
    out += fmt::format(
        "  step = a x GA + b: measured a {:.4f} s, b {:.3f} s; predicted a {:.4f} s ({:+.1f}%), b "
        "{:.3f} s ({:+.1f}%)\n",
        f.a_measured, f.b_measured, f.a_predicted, f.a_error_pct(), f.b_predicted, f.b_error_pct());
  std::string per_step;
  for (const auto& t : f.terms)
    if (std::abs(t.b) >= 0.0005)
      per_step += fmt::format("{}{} {:.3f}", per_step.empty() ? "" : ", ", t.name, t.b);
  if (!per_step.empty()) out += fmt::format("  predicted b by term (s): {}\n", per_step);
  return out;
}

nlohmann::ordered_json series_json(const std::vector<predict::SeriesFit>& series) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : series) {
    nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < f.sizes.size(); ++i) {
      const auto& r = *f.sizes[i];
      nlohmann::ordered_json s{{"name", r.name},
                               {"gpus", r.gpus},
                               {"microbatches", r.microbatches},
                               {"measured_step_s", r.measured_step_s},
                               {"predicted_step_s", r.predicted_step_s}};
      if (i > 0)
        s["per_gpu_ratio"] = {{"measured", f.ratio_measured[i - 1]},
                              {"predicted", f.ratio_predicted[i - 1]},
                              {"error_pct", f.ratio_error_pct[i - 1]}};
      sizes.push_back(s);
    }
    nlohmann::ordered_json j{{"name", f.name}, {"sizes", sizes}};
    if (f.fitted)
      j["fit"] = {{"a_measured_s", f.a_measured},   {"b_measured_s", f.b_measured},
                  {"a_predicted_s", f.a_predicted}, {"b_predicted_s", f.b_predicted},
                  {"a_error_pct", f.a_error_pct()}, {"b_error_pct", f.b_error_pct()}};
    if (!f.terms.empty()) {
      nlohmann::ordered_json terms = nlohmann::ordered_json::object();
      for (const auto& t : f.terms) terms[t.name] = {{"a_s", t.a}, {"b_s", t.b}};
      j["fit"]["predicted_by_term"] = terms;
    }
    out.push_back(j);
  }
  return out;
}
}  // namespace

namespace {
nlohmann::ordered_json pairs_json(const std::vector<predict::PairRow>& pairs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& p : pairs)
    out.push_back({{"name", p.name},
                   {"decision", config::decision_names().name(p.decision)},
                   {"a", p.a->name},
                   {"b", p.b->name},
                   {"predicted_ratio", p.predicted_ratio},
                   {"measured_ratio", p.measured_ratio},
                   {"ratio_error_pct", p.ratio_error_pct},
                   {"tolerance_pct", p.tolerance_pct},
                   {"ok", p.ok},
                   {"significant", p.significant},
                   {"direction_right", p.direction_right},
                   {"source", p.source}});
  return out;
}

nlohmann::ordered_json pair_summary_json(const predict::PairSummary& s) {
  nlohmann::ordered_json j{{"pairs", s.pairs},
                           {"mean_abs_ratio_error_pct", s.mae()},
                           {"significant", s.significant},
                           {"wrong_direction", s.wrong_direction}};
  if (s.worst)
    j["worst"] = {{"name", s.worst->name}, {"ratio_error_pct", s.worst->ratio_error_pct}};
  return j;
}

nlohmann::ordered_json families_json(const std::vector<predict::FamilyRow>& families) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : families) {
    nlohmann::ordered_json members = nlohmann::ordered_json::array();
    for (const auto* r : f.members)
      members.push_back({{"name", r->name},
                         {"measured_tokens_per_s_per_gpu", r->measured_per_gpu()},
                         {"predicted_tokens_per_s_per_gpu", r->predicted_per_gpu()}});
    out.push_back({{"name", f.name},
                   {"members", members},
                   {"kendall_tau", f.kendall_tau},
                   {"pairs", f.pairs},
                   {"pairs_ordered_right", f.pairs_ordered_right},
                   {"regret_pct", f.regret_pct},
                   {"measured_best", f.measured_best->name},
                   {"predicted_best", f.predicted_best->name}});
  }
  return out;
}

// The pairs' table, their summary overall and by decision, the unresolved ones.
std::string pairs_text(const predict::ValidateSummary& sum) {
  const auto& pairs = sum.compared.pairs;
  std::string out;
  if (!pairs.empty()) {
    out += fmt::format("\n{:<64} {:<12} {:>9} {:>9} {:>8} {:>6}  {}\n",
                       "pair (B vs A, per-GPU throughput B/A)", "decision", "measured", "predicted",
                       "error", "tol", "");
    for (const auto& p : pairs)
      out += fmt::format("{:<64} {:<12} {:>9.4f} {:>9.4f} {:>+7.1f}% {:>5.1f}%  {}{}\n", p.name,
                         config::decision_names().name(p.decision), p.measured_ratio,
                         p.predicted_ratio, p.ratio_error_pct, p.tolerance_pct,
                         p.ok ? "ok" : "OVER", p.direction_right ? "" : " WRONG DIRECTION");
    const auto& a = sum.pairs_all;
    out += fmt::format(
        "{} over {}, mean absolute ratio error {:.2f}%, {} among {} "
        "with a measured difference over {:g}%, {} over tolerance\n",
        counted(a.pairs, "pair"), counted(sum.pairs_by_decision.size(), "decision"), a.mae(),
        counted(a.wrong_direction, "wrong direction"), a.significant,
        100 * predict::kPairSignificantRatio, sum.pairs_failed);
    for (const auto& [k, v] : sum.pairs_by_decision)
      out += fmt::format(
          "  decision {:<13} {:>3} {:<6} mean absolute ratio error {:6.2f}%, {}; worst {} "
          "({:+.1f}%)\n",
          k, v.pairs, v.pairs == 1 ? "pair," : "pairs,", v.mae(),
          counted(v.wrong_direction, "wrong direction"), v.worst->name, v.worst->ratio_error_pct);
  }
  for (const auto& u : sum.compared.unresolved)
    out += fmt::format(
        "unresolved pair: {} compares with '{}', which is not among the validated runs\n", u.file,
        u.run);
  return out;
}

std::string families_text(const std::vector<predict::FamilyRow>& families) {
  std::string out;
  for (const auto& f : families) {
    out += fmt::format(
        "\nfamily {} ({} members; tokens/s/GPU, rank 1 the fastest)\n{:<48} {:>9} {:>5} {:>9} "
        "{:>5}\n",
        f.name, f.members.size(), "member", "measured", "rank", "predicted", "rank");
    const auto rank = [&](const predict::ValidateRow* r,
                          double (predict::ValidateRow::*per_gpu)() const) {
      return 1 +
             std::count_if(f.members.begin(), f.members.end(), [&](const predict::ValidateRow* o) {
               return (o->*per_gpu)() > (r->*per_gpu)();
             });
    };
    for (const auto* r : f.members)
      out += fmt::format("{:<48} {:>9.0f} {:>5} {:>9.0f} {:>5}\n", r->name, r->measured_per_gpu(),
                         rank(r, &predict::ValidateRow::measured_per_gpu), r->predicted_per_gpu(),
                         rank(r, &predict::ValidateRow::predicted_per_gpu));
    out += fmt::format(
        "  Kendall's tau {:+.2f}: {} of {} pairs ordered right; predicted best {} (measured best "
        "{}), "
        "regret {:.1f}%\n",
        f.kendall_tau, f.pairs_ordered_right, f.pairs, f.predicted_best->name,
        f.measured_best->name, f.regret_pct);
  }
  return out;
}
}  // namespace

nlohmann::ordered_json evidence_json(const predict::ValidateSummary& sum) {
  const auto r2 = [](double x) { return std::round(x * 100) / 100; };
  nlohmann::ordered_json decisions = nlohmann::ordered_json::object();
  for (const auto& e : config::decision_names().entries()) {
    const auto it = sum.pairs_by_decision.find(std::string(e.name));
    const predict::PairSummary none;
    const predict::PairSummary& p = it == sum.pairs_by_decision.end() ? none : it->second;
    nlohmann::ordered_json d{
        {"pairs", p.pairs},
        {"significant", p.significant},
        {"wrong_direction", p.wrong_direction},
        {"mean_abs_ratio_error_pct", r2(p.mae())},
        {"max_abs_ratio_error_pct", p.worst ? r2(std::abs(p.worst->ratio_error_pct)) : 0.0},
        {"max_measured_effect_pct", r2(p.max_effect_pct)}};
    if (p.worst) d["worst"] = p.worst->name;
    decisions[std::string(e.name)] = d;
  }
  nlohmann::ordered_json settings = nlohmann::ordered_json::array();
  for (const auto& s : config::decision_settings())
    settings.push_back({{"path", s.path},
                        {"decision", s.decision ? nlohmann::ordered_json(
                                                      config::decision_names().name(*s.decision))
                                                : nlohmann::ordered_json(nullptr)}});
  return {{"about",
           "the what-if corpus's record per decision: written by `moesim validate scenarios "
           "--evidence FILE` "
           "(config/decisions.hpp); the CTest decision-evidence holds it equal to what validate "
           "computes"},
          {"pairs", sum.pairs_all.pairs},
          {"mean_abs_ratio_error_pct", r2(sum.pairs_all.mae())},
          {"wrong_direction", sum.pairs_all.wrong_direction},
          {"decisions", decisions},
          {"settings", settings}};
}

nlohmann::ordered_json validate_json(const std::vector<predict::ValidateRow>& rows,
                                     const predict::ValidateSummary& sum, const ValidateExtras& x) {
  const auto& [all, series, memory, timing_failed, memory_failed] =
      std::tie(sum.all, sum.series, sum.memory, sum.timing_failed, sum.memory_failed);
  nlohmann::ordered_json out_rows = nlohmann::ordered_json::array();
  for (const auto& r : rows)
    out_rows.push_back({{"name", r.name},
                        {"file", r.file},
                        {"system", r.system},
                        {"dispatcher", r.dispatcher},
                        {"metric", r.metric},
                        {"measured", r.measured},
                        {"predicted", r.predicted},
                        {"error_pct", r.error_pct},
                        {"tolerance_pct", r.tolerance_pct},
                        {"ok", r.ok}});
  if (x.timings)
    for (std::size_t i = 0; i < rows.size(); ++i) out_rows[i]["wall_s"] = rows[i].wall_s;
  const auto groups = [](const predict::ErrorGroups& m) {
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    for (const auto& [k, v] : m)
      g[k] = {
          {"runs", v.runs}, {"mean_abs_error_pct", v.mae()}, {"speed_bias_pct", v.speed_bias()}};
    return g;
  };
  nlohmann::ordered_json out{{"rows", out_rows},
                             {"mean_abs_error_pct", all.mae()},
                             {"failed", sum.failed()},
                             {"skipped_without_measured", x.skipped}};
  if (!x.system_set.empty()) out["system_set"] = x.system_set;
  if (all.worst) out["worst"] = {{"name", all.worst->name}, {"error_pct", all.worst->error_pct}};
  if (memory.runs) {
    out["memory"] = {
        {"points", memory.runs}, {"mean_abs_error_pct", memory.mae()}, {"failed", memory_failed}};
    out["memory"]["worst"] = {{"name", memory.worst->name}, {"error_pct", memory.worst->error_pct}};
  }
  for (const auto& g : sum.groupings()) out[g.json_key] = groups(*g.groups);
  if (!series.empty()) out["series"] = series_json(series);
  if (!sum.compared.pairs.empty() || !sum.compared.unresolved.empty()) {
    out["pairs"] = pairs_json(sum.compared.pairs);
    out["pairs_summary"] = pair_summary_json(sum.pairs_all);
    out["pairs_summary"]["failed"] = sum.pairs_failed;
    nlohmann::ordered_json by_decision = nlohmann::ordered_json::object();
    for (const auto& [k, v] : sum.pairs_by_decision) by_decision[k] = pair_summary_json(v);
    out["pairs_by_decision"] = by_decision;
    nlohmann::ordered_json unresolved = nlohmann::ordered_json::array();
    for (const auto& u : sum.compared.unresolved)
      unresolved.push_back({{"file", u.file}, {"run", u.run}});
    out["unresolved_pairs"] = unresolved;
  }
  if (!sum.compared.families.empty()) out["families"] = families_json(sum.compared.families);
  if (!x.predictions.empty()) {
    nlohmann::ordered_json preds = nlohmann::ordered_json::array();
    for (const auto& r : x.predictions)
      preds.push_back({{"name", r.name},
                       {"file", r.file},
                       {"system", r.system},
                       {"step_time_s", r.step_time_s},
                       {"tflops_per_gpu", r.tflops_per_gpu},
                       {"peak_memory_gib", r.peak_memory_gib}});
    if (x.timings)
      for (std::size_t i = 0; i < x.predictions.size(); ++i)
        preds[i]["wall_s"] = x.predictions[i].wall_s;
    out["predictions"] = preds;
  }
  if (x.moved) out["baseline"] = baseline_json(*x.moved, x.tolerance_pct);
  return out;
}

std::string what_if_text(const std::vector<std::string>& system_set) {
  return fmt::format(
      "every system with {} set on the command line (--set), not the calibrated model",
      fmt::join(system_set, ", "));
}

std::string validate_text(const std::vector<predict::ValidateRow>& rows,
                          const predict::ValidateSummary& sum, const ValidateExtras& x) {
  const auto& [all, series, memory, timing_failed, memory_failed] =
      std::tie(sum.all, sum.series, sum.memory, sum.timing_failed, sum.memory_failed);
  std::string out;
  if (!x.system_set.empty()) out += fmt::format("what-if: {}\n\n", what_if_text(x.system_set));
  if (all.runs) {
    out += fmt::format("{:<44} {:>10} {:>10} {:>8} {:>6}  {}\n", "scenario", "measured",
                       "predicted", "error", "tol", "");
    for (const auto& r : rows)
      if (!r.memory)
        out +=
            fmt::format("{:<44} {:>10.2f} {:>10.2f} {:>+7.1f}% {:>5.1f}%  {}\n", r.name, r.measured,
                        r.predicted, r.error_pct, r.tolerance_pct, r.ok ? "ok" : "OVER");
    out += fmt::format("{}, mean absolute error {:.2f}%, {} over tolerance\n",
                       counted(all.runs, "run"), all.mae(), timing_failed);
    if (all.worst)
      out += fmt::format("worst: {} ({:+.1f}%)\n", all.worst->name, all.worst->error_pct);
  }
  if (all.runs > 1) {
    out += "by group (speed bias: the mean error as a speed, + where moesim runs faster)\n";
    for (const auto& g : sum.groupings())
      for (const auto& [k, v] : *g.groups)
        out += fmt::format(
            "  {:<10} {:<26} {:>3} {:<5} mean absolute error {:6.2f}%, speed bias {:+6.1f}%\n",
            g.label, k, v.runs, v.runs == 1 ? "run," : "runs,", v.mae(), v.speed_bias());
  }
  for (const auto& f : series) out += series_text(f);
  out += pairs_text(sum);
  out += families_text(sum.compared.families);
  if (memory.runs) {
    out += fmt::format("{}{:<50} {:<22} {:>8} {:>9} {:>8} {:>6}  {}\n", all.runs ? "\n" : "",
                       "memory point", "counter", "measured", "predicted", "error", "tol", "");
    for (const auto& r : rows)
      if (r.memory)
        out += fmt::format("{:<50} {:<22} {:>5.2f} GiB {:>6.2f} GiB {:>+7.1f}% {:>5.1f}%  {}\n",
                           r.name, r.metric.substr(r.metric.find(' ') + 1), r.measured, r.predicted,
                           r.error_pct, r.tolerance_pct, r.ok ? "ok" : "OVER");
    out += fmt::format("{}, mean absolute error {:.2f}%, {} over tolerance; worst: {} ({:+.1f}%)\n",
                       counted(memory.runs, "memory point"), memory.mae(), memory_failed,
                       memory.worst->name, memory.worst->error_pct);
  }
  if (!x.predictions.empty()) {
    out += fmt::format("{}{:<50} {:<12} {:>10} {:>10} {:>12}\n", out.empty() ? "" : "\n",
                       "scenario without a measurement", "system", "step time", "TFLOPS/GPU",
                       "peak memory");
    for (const auto& r : x.predictions)
      out += fmt::format("{:<50} {:<12} {:>9.3f}s {:>10.1f} {:>8.1f} GiB\n", r.name, r.system,
                         r.step_time_s, r.tflops_per_gpu, r.peak_memory_gib);
  }
  if (x.skipped)
    out += fmt::format("{} without a measured block skipped\n", counted(x.skipped, "file"));
  if (x.moved) out += baseline_text(*x.moved, x.tolerance_pct);
  return out;
}

}  // namespace moesim::reports
