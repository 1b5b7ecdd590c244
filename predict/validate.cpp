#include "predict/validate.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "calibration/least_squares.hpp"
#include "config/json_reader.hpp"
#include "hw_models/dispatcher.hpp"
#include "predict/parallel.hpp"
#include "predict/predict.hpp"

namespace moesim::predict {

ValidateRow validate_row(const std::string& file, const config::Scenario& sc, const Prediction& p) {
  const bool memory = !config::is_timing(sc.measured->metric);
  ValidateRow r;
  r.file = file;
  r.name = sc.name;
  r.system = sc.system.name;
  r.dispatcher = sc.model.is_moe()
                     ? std::string(hw_models::dispatcher_names().name(sc.framework.dispatcher))
                     : "-";
  r.metric = config::measured_name(*sc.measured);
  r.model = sc.model.name;
  r.tp = sc.parallelism.tp;
  r.held_out = !sc.measured->held_out.empty();
  r.memory = memory;
  r.measured = sc.measured->value;
  r.predicted = predicted_metric(*sc.measured, p);
  r.error_pct = 100 * (r.predicted - r.measured) / r.measured;
  r.tolerance_pct = sc.measured->tolerance_pct;
  r.ok = std::abs(r.error_pct) <= r.tolerance_pct;
  r.wall_s = p.wall_s;
  r.series = sc.measured->series;
  r.gpus = sc.gpus;
  r.microbatches = sc.parallelism.num_microbatches;
  r.predicted_step_s = p.step.step_time_s;
  r.measured_step_s = sc.measured->metric == config::MeasuredMetric::step_time_s
                          ? r.measured
                          : r.predicted_step_s * r.predicted / r.measured;
  r.tokens_per_step = static_cast<double>(sc.training.global_batch_size * sc.training.seq_length);
  if (!memory) r.step_terms = step_terms(p.step.breakdown);
  r.source = sc.measured->source;
  r.family = sc.measured->family;
  r.compare_with = sc.measured->compare_with;
  return r;
}

std::vector<ValidateRow> validate_files(const std::vector<std::string>& files,
                                        const config::LoadOptions& opts, int jobs) {
  std::vector<config::Scenario> scenarios;
  for (const auto& f : files) {
    scenarios.push_back(config::load_scenario_file(f, opts));
    if (!scenarios.back().measured)
      throw config::InputError(f, "measured", "no measured block to validate against");
  }
  // Independent simulations on `jobs` threads; rows keep the files' order.
  std::vector<ValidateRow> rows(scenarios.size());
  run_parallel(scenarios.size(), jobs, [&](std::size_t i) {
    const auto& sc = scenarios[i];
    rows[i] = validate_row(
        files[i], sc, config::is_timing(sc.measured->metric) ? predict(sc) : predict_memory(sc));
  });
  return rows;
}

std::vector<PredictionRow> predict_files(const std::vector<std::string>& files,
                                         const config::LoadOptions& opts, int jobs) {
  std::vector<config::Scenario> scenarios;
  for (const auto& f : files) scenarios.push_back(config::load_scenario_file(f, opts));
  std::vector<PredictionRow> rows(scenarios.size());
  run_parallel(scenarios.size(), jobs, [&](std::size_t i) {
    const auto p = predict(scenarios[i]);
    rows[i] = {files[i],
               scenarios[i].name,
               scenarios[i].system.name,
               p.step.step_time_s,
               p.tflops_per_gpu,
               p.peak_memory_gib,
               p.wall_s};
  });
  return rows;
}

std::vector<std::pair<std::string, double>> step_terms(const schedules::Breakdown& b) {
  return {{"compute", b.compute},
          {"exposed_communication", b.exposed_comm},
          {"host_bound_idle", b.host_bound_idle},
          {"schedule_bubble", b.schedule_bubble},
          {"stage_imbalance", b.stage_imbalance},
          {"other", b.other},
          {"straggler_wait", b.straggler_wait}};
}

std::vector<SeriesFit> fit_series(const std::vector<ValidateRow>& rows) {
  std::map<std::string, SeriesFit> by_name;
  for (const auto& r : rows)
    if (!r.series.empty() && !r.memory) by_name[r.series].sizes.push_back(&r);
  std::vector<SeriesFit> out;
  for (auto& [name, f] : by_name) {
    f.name = name;
    std::stable_sort(f.sizes.begin(), f.sizes.end(),
                     [](const ValidateRow* x, const ValidateRow* y) { return x->gpus < y->gpus; });
    std::vector<double> ga, m, p;
    for (const auto* r : f.sizes) {
      ga.push_back(static_cast<double>(r->microbatches));
      m.push_back(r->measured_step_s);
      p.push_back(r->predicted_step_s);
    }
    // Two or more microbatch counts make the lines determined (rank 2).
    if (const auto lm = calibration::fit_line(ga, m), lp = calibration::fit_line(ga, p);
        lm.rank == 2 && lp.rank == 2) {
      f.fitted = true;
      f.b_measured = lm.coefficients(0), f.a_measured = lm.coefficients(1);
      f.b_predicted = lp.coefficients(0), f.a_predicted = lp.coefficients(1);
      // Rows without terms (built by hand) leave the split empty; so does a mix.
      const std::size_t n_terms = f.sizes.front()->step_terms.size();
      const bool same = std::all_of(f.sizes.begin(), f.sizes.end(), [&](const ValidateRow* r) {
        return r->step_terms.size() == n_terms;
      });
      for (std::size_t t = 0; same && t < n_terms; ++t) {
        std::vector<double> y;
        for (const auto* r : f.sizes) y.push_back(r->step_terms.at(t).second);
        const auto lt = calibration::fit_line(ga, y);
        f.terms.push_back(
            {f.sizes.front()->step_terms[t].first, lt.coefficients(1), lt.coefficients(0)});
      }
    }
    for (std::size_t i = 1; i < f.sizes.size(); ++i) {
      const auto *lo = f.sizes[i - 1], *hi = f.sizes[i];
      f.ratio_measured.push_back(hi->measured_per_gpu() / lo->measured_per_gpu());
      f.ratio_predicted.push_back(hi->predicted_per_gpu() / lo->predicted_per_gpu());
      f.ratio_error_pct.push_back(100 * (f.ratio_predicted.back() / f.ratio_measured.back() - 1));
    }
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

PairRow make_pair_row(const ValidateRow& a, const ValidateRow& b, config::Decision decision,
                      std::string source, double tolerance_pct) {
  PairRow p;
  p.name = b.name + " vs " + a.name;
  p.a = &a, p.b = &b;
  p.decision = decision;
  p.source = std::move(source);
  p.measured_ratio = b.measured_per_gpu() / a.measured_per_gpu();
  p.predicted_ratio = b.predicted_per_gpu() / a.predicted_per_gpu();
  p.ratio_error_pct = 100 * (p.predicted_ratio / p.measured_ratio - 1);
  p.tolerance_pct = tolerance_pct;
  p.significant = std::abs(p.measured_ratio - 1) > kPairSignificantRatio;
  p.direction_right = !p.significant || (p.predicted_ratio > 1) == (p.measured_ratio > 1);
  p.ok = std::abs(p.ratio_error_pct) <= p.tolerance_pct;
  return p;
}

int sign(double x) {
  return (x > 0) - (x < 0);
}

FamilyRow make_family(std::string name, std::vector<const ValidateRow*> members) {
  FamilyRow f;
  f.name = std::move(name);
  f.members = std::move(members);
  int discordant = 0;
  for (std::size_t i = 0; i < f.members.size(); ++i)
    for (std::size_t j = i + 1; j < f.members.size(); ++j) {
      const auto *x = f.members[i], *y = f.members[j];
      const int m = sign(x->measured_per_gpu() - y->measured_per_gpu());
      const int p = sign(x->predicted_per_gpu() - y->predicted_per_gpu());
      ++f.pairs;
      if (m != 0 && p != 0) (m == p ? f.pairs_ordered_right : discordant) += 1;
    }
  f.kendall_tau = f.pairs ? static_cast<double>(f.pairs_ordered_right - discordant) / f.pairs : 0;
  for (const auto* r : f.members) {
    if (!f.measured_best || r->measured_per_gpu() > f.measured_best->measured_per_gpu())
      f.measured_best = r;
    if (!f.predicted_best || r->predicted_per_gpu() > f.predicted_best->predicted_per_gpu())
      f.predicted_best = r;
  }
  if (f.measured_best)
    f.regret_pct =
        100 * (f.measured_best->measured_per_gpu() / f.predicted_best->measured_per_gpu() - 1);
  return f;
}

}  // namespace

PairsAndFamilies compare_pairs(const std::vector<ValidateRow>& rows,
                               const std::vector<SeriesFit>& series) {
  PairsAndFamilies out;
  std::map<std::string, const ValidateRow*> by_name;
  std::map<std::string, std::vector<const ValidateRow*>> families;
  for (const auto& r : rows)
    if (!r.memory) {
      by_name.emplace(r.name, &r);
      if (!r.family.empty()) families[r.family].push_back(&r);
    }
  for (const auto& r : rows)
    for (const auto& c : r.compare_with) {
      const auto it = by_name.find(c.run);
      if (it == by_name.end()) {
        out.unresolved.push_back({r.file, c.run});
        continue;
      }
      // B's file may name where the pairing is published; else its measurement's source.
      out.pairs.push_back(make_pair_row(*it->second, r, c.decision,
                                        c.source.empty() ? r.source : c.source, c.tolerance_pct));
    }
  for (const auto& f : series)
    for (std::size_t i = 1; i < f.sizes.size(); ++i) {
      const auto *lo = f.sizes[i - 1], *hi = f.sizes[i];
      out.pairs.push_back(make_pair_row(*lo, *hi, config::Decision::scale, "series " + f.name,
                                        std::max(lo->tolerance_pct, hi->tolerance_pct)));
    }
  for (auto& [name, members] : families)
    if (members.size() >= 2) out.families.push_back(make_family(name, std::move(members)));
  return out;
}

bool NaturalLess::operator()(const std::string& a, const std::string& b) const {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Equal-valued numbers with different leading zeros fall through to the text.
      const std::string_view x = std::string_view(a).substr(i, ie - i),
                             y = std::string_view(b).substr(j, je - j);
      const auto strip = [](std::string_view v) {
        return v.substr(std::min(v.find_first_not_of('0'), v.size()));
      };
      const std::string_view xs = strip(x), ys = strip(y);
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

ValidateSummary summarize(const std::vector<ValidateRow>& rows) {
  ValidateSummary s;
  for (const auto& r : rows) {
    (r.memory ? s.memory_failed : s.timing_failed) += r.ok ? 0 : 1;
    if (r.memory) {
      s.memory.add(r);
      continue;
    }
    s.all.add(r);
    s.by_system[r.system].add(r);
    s.by_dispatcher[r.dispatcher].add(r);
    s.by_set[r.held_out ? "held out" : "corpus"].add(r);
    s.by_model[r.model].add(r);
    s.by_tp[fmt::format("tp{}", r.tp)].add(r);
  }
  s.series = fit_series(rows);
  s.compared = compare_pairs(rows, s.series);
  for (const auto& p : s.compared.pairs) {
    s.pairs_all.add(p);
    s.pairs_by_decision[std::string(config::decision_names().name(p.decision))].add(p);
    s.pairs_failed += p.ok ? 0 : 1;
  }
  return s;
}

}  // namespace moesim::predict
