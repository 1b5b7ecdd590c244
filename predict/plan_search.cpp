// predict/plan_search.cpp: the branch-and-bound search behind `moesim plan` (search_plan,
// predict/plan.hpp): each layout's bound from its relaxed candidates, best-first expansion
// of layouts into candidates, waves of simulations until no bound can beat the top K.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "config/inert_settings.hpp"
#include "hw_models/flow_cache.hpp"
#include "predict/parallel.hpp"
#include "predict/plan.hpp"
#include "predict/predict.hpp"
#include "predict/step_input.hpp"

namespace moesim::predict {

schedules::StepBound step_time_lower_bound(const config::Scenario& sc, double ep_load,
                                           hw_models::FlowCache* ep_cache) {
  const hw_models::FlowComm comm = detail::flow_comm(sc, ep_cache);
  return schedules::step_lower_bound(detail::step_input(sc, sc.parallelism, ep_load), comm,
                                     ep_cache);
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The objective's value at a step time of `t` with an ETTR of 1: the best a bound allows.
std::optional<double> optimistic_value(const config::Scenario& sc, double t,
                                       const PlanSearch& search, const SweepResult& r) {
  SweepResult o = r;
  const ScenarioSummary s = summarize(sc);
  const double gpus = static_cast<double>(sc.gpus);
  o.has_timing = true;
  o.step_time_s = t;
  o.tflops_per_gpu = s.flops_per_step / (t * gpus * 1e12);
  o.tokens_per_s_per_gpu = s.tokens_per_step / (t * gpus);
  o.mfu = o.tflops_per_gpu / sc.system.gpu.peak_tflops(hw_models::Dtype::bf16);
  o.ettr = 1;
  if (search.token_budget) set_budget_figures(o, sc, *search.token_budget);
  return objective_value(o, search.objective);
}

}  // namespace

std::int64_t candidates_per_layout(std::span<const PlanDimension> dims) {
  std::int64_t n = 1;
  for (const auto& d : dims) n *= static_cast<std::int64_t>(d.values.size());
  return n;
}

namespace {

// A settings index's value per dimension (mixed radix, the last dimension fastest).
std::vector<std::size_t> digits(std::span<const PlanDimension> dims, std::int64_t index) {
  std::vector<std::size_t> v(dims.size());
  for (std::size_t k = dims.size(); k-- > 0;) {
    const auto n = static_cast<std::int64_t>(dims[k].values.size());
    v[k] = static_cast<std::size_t>(index % n);
    index /= n;
  }
  return v;
}

config::SweepPoint make_point(const config::SweepPoint& layout, std::span<const PlanDimension> dims,
                              const std::vector<std::size_t>& at, std::int64_t id) {
  config::SweepPoint p{id, layout.values, layout.scenario};
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto dot = dims[k].path.find('.');
    config::Json& parent = p.scenario[dims[k].path.substr(0, dot)];
    if (!parent.is_object()) parent = config::Json::object();
    parent[dims[k].path.substr(dot + 1)] = dims[k].values[at[k]];
    p.values.push_back(config::sweep_value_text(dims[k].values[at[k]]));
  }
  return p;
}

}  // namespace

config::SweepPoint candidate_point(std::span<const config::SweepPoint> layouts,
                                   std::span<const PlanDimension> dims, std::int64_t id) {
  const std::int64_t per_layout = candidates_per_layout(dims);
  if (per_layout <= 0 || id < 0 || static_cast<std::size_t>(id / per_layout) >= layouts.size())
    throw std::logic_error(fmt::format("plan: candidate {} is not in the plan's space", id));
  const auto layout = static_cast<std::size_t>(id / per_layout);
  return make_point(layouts[layout], dims, digits(dims, id % per_layout), id);
}

PlanOutcome search_plan(std::span<const config::SweepPoint> layouts,
                        std::span<const PlanDimension> dims, const std::string& file,
                        const PlanSearch& search) {
  PlanOutcome out;
  const std::int64_t per_layout = candidates_per_layout(dims);
  out.layouts = static_cast<std::int64_t>(layouts.size());
  hw_models::FlowCache cache;
  // The system resolved once for every candidate (config::SystemCache).
  config::SystemCache systems;
  config::LoadOptions load = search.load;
  if (!load.systems) load.systems = &systems;
  schedules::StepOptions step;
  step.flow_cache = &cache;
  const auto better = [&](double a, double b) { return objective_better(search.objective, a, b); };
  // A violation (header) is better than its bound beyond rounding: one bound's sums run in
  // another order than another's (the all-to-all overlap reorders a rank's passes), so two
  // equal bounds can differ in the last bits.
  const auto better_beyond_rounding = [&](double a, double b) {
    return better(a, b) && std::abs(a - b) > 1e-9 * std::abs(b);
  };
  // An item's key: its bound, or, where no bound could be had, the best value there is
  // (first, and never pruned).
  using Key = std::optional<double>;
  const double unbounded = config::higher_is_better(search.objective) ? HUGE_VAL : -HUGE_VAL;
  const auto key = [&](const Key& k) { return k.value_or(unbounded); };
  const auto before = [&](const Key& a, const Key& b) { return better(key(a), key(b)); };

  // 1. Each layout's bound: its relaxed candidates, one per value of the device dimensions.
  auto t0 = Clock::now();
  std::vector<std::vector<std::size_t>> relaxed_sets{std::vector<std::size_t>(dims.size())};
  for (std::size_t k = 0; k < dims.size(); ++k) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& s : relaxed_sets)
      for (std::size_t v = 0; v < (dims[k].device ? dims[k].values.size() : 1); ++v) {
        auto t = s;
        t[k] = dims[k].device ? v : dims[k].relaxed;
        next.push_back(std::move(t));
      }
    relaxed_sets = std::move(next);
  }
  std::vector<Key> layout_key(layouts.size());
  std::vector<char> layout_known(layouts.size(), 0);
  run_parallel(layouts.size(), search.jobs, [&](std::size_t i) {
    for (const auto& s : relaxed_sets) {
      const config::SweepPoint p = make_point(layouts[i], dims, s, 0);
      evaluate_point(p, file, search.token_budget, load,
                     [&](const config::Scenario& sc, double ep_load, SweepResult& r) {
                       const auto b = step_time_lower_bound(sc, ep_load, &cache);
                       const Key v = optimistic_value(sc, b.step_time_s, search, r);
                       if (v && (!layout_known[i] || (layout_key[i] && better(*v, *layout_key[i]))))
                         layout_key[i] = v;
                       layout_known[i] = 1;
                       return false;
                     });
    }
    // Not one relaxed candidate loaded: no bound; the layout is expanded first.
    if (!layout_known[i]) layout_key[i].reset();
  });
  std::vector<std::size_t> layout_order(layouts.size());
  for (std::size_t i = 0; i < layouts.size(); ++i) layout_order[i] = i;
  std::stable_sort(layout_order.begin(), layout_order.end(), [&](std::size_t a, std::size_t b) {
    return before(layout_key[a], layout_key[b]);
  });
  out.bound_wall_s = since(t0);

  // 2. Best first over layouts and candidates.
  std::map<std::int64_t, PlanCandidate> expanded;
  // Expanded, awaiting simulation, best bound first (ties by id): ordered as they are
  // inserted, so an expansion costs its own candidates' log n, not a re-sort of them all.
  struct Pending {
    double key;
    std::int64_t id;
  };
  const auto pending_before = [&](const Pending& a, const Pending& b) {
    if (better(a.key, b.key)) return true;
    if (better(b.key, a.key)) return false;
    return a.id < b.id;
  };
  std::set<Pending, decltype(pending_before)> pending(pending_before);
  const auto expand = [&](std::size_t li) {
    const auto t1 = Clock::now();
    ++out.layouts_expanded;
    std::vector<PlanCandidate> cs(static_cast<std::size_t>(per_layout));
    std::vector<char> ready(cs.size(), 0);
    // Candidates in groups that differ only on the ladder dimension (if any), each group
    // in rung order: the first rung that fits ends it.
    const auto ladder =
        std::find_if(dims.begin(), dims.end(), [](const PlanDimension& d) { return d.ladder; });
    const std::size_t lk = static_cast<std::size_t>(ladder - dims.begin());
    const std::size_t rungs = ladder == dims.end() ? 1 : ladder->values.size();
    std::int64_t stride = 1;  // the ladder's digit's weight in the settings index
    for (std::size_t k = lk + 1; k < dims.size(); ++k)
      stride *= static_cast<std::int64_t>(dims[k].values.size());
    std::vector<std::int64_t> groups;
    for (std::int64_t s = 0; s < per_layout; ++s)
      if (ladder == dims.end() || digits(dims, s)[lk] == 0) groups.push_back(s);
    run_parallel(groups.size(), search.jobs, [&](std::size_t gi) {
      std::optional<std::size_t> fits;
      for (std::size_t rung = 0; rung < rungs; ++rung) {
        const auto s =
            static_cast<std::size_t>(groups[gi] + static_cast<std::int64_t>(rung) * stride);
        const auto at = digits(dims, static_cast<std::int64_t>(s));
        PlanCandidate& c = cs[s];
        c.point =
            make_point(layouts[li], dims, at,
                       static_cast<std::int64_t>(li) * per_layout + static_cast<std::int64_t>(s));
        if (fits) {
          c.row.id = c.point.id;
          c.row.status = SweepStatus::dominated;
          c.row.predicted_with = predicted_with(load);
          c.row.message = fmt::format("{} = {} fits and recomputes less", ladder->path,
                                      config::sweep_value_text(ladder->values[*fits]));
          c.point.scenario = config::Json();  // values only, as every candidate (below)
          continue;
        }
        c.row = evaluate_point(
            c.point, file, search.token_budget, load,
            [&](const config::Scenario& sc, double ep_load, SweepResult& r) {
              // A varied setting that changes nothing here, off its first
              // value: the candidate repeats that one.
              for (const auto& w : config::inert_setting_warnings(sc)) {
                const std::string name = w.setting.substr(0, w.setting.find('['));
                for (std::size_t k = 0; k < dims.size(); ++k)
                  if (dims[k].path == name && at[k] != 0) {
                    r.status = SweepStatus::duplicate;
                    r.message = fmt::format(
                        "{} is inert here ({}): the candidate with {} = {} is the same", w.setting,
                        w.reason, name, config::sweep_value_text(dims[k].values[0]));
                    return false;
                  }
              }
              if (!r.fits_in_memory) {
                r.status = SweepStatus::does_not_fit;
                return false;
              }
              const auto b = step_time_lower_bound(sc, ep_load, &cache);
              c.bound = optimistic_value(sc, b.step_time_s, search, r);
              r.status = SweepStatus::bound;
              ready[s] = 1;
              return false;
            });
        // The candidate keeps its CSV values, not its scenario: rebuilt when it is
        // simulated (candidate_point), so a plan's memory does not grow with the scenario.
        c.point.scenario = config::Json();
        if (ready[s] && ladder != dims.end()) fits = rung;
      }
    });
    for (std::size_t s = 0; s < cs.size(); ++s) {
      const std::int64_t id = cs[s].point.id;
      if (ready[s]) {
        pending.insert({key(cs[s].bound), id});
        if (cs[s].bound && layout_key[li] && better_beyond_rounding(*cs[s].bound, *layout_key[li]))
          out.violations.push_back(id);
      }
      expanded.emplace(id, std::move(cs[s]));
    }
    out.bound_wall_s += since(t1);
  };

  std::vector<double> best;  // the simulated candidates' objective values, best first
  const auto kth = [&]() -> Key {
    if (search.top <= 0 || best.size() < static_cast<std::size_t>(search.top)) return std::nullopt;
    return best[static_cast<std::size_t>(search.top) - 1];
  };
  // A bound worth simulating: it beats the K-th best (or fewer than K are in), or the
  // reference value.
  const auto for_top = [&](double k, const Key& bar) { return !bar || better(k, *bar); };
  const auto beats_bar = [&](double k, const Key& bar) {
    return for_top(k, bar) ||
           (search.reference && !out.reference_capped && better(k, *search.reference));
  };
  std::size_t next_layout = 0;
  double simulate_s = 0;
  for (;;) {
    const Key bar = kth();
    std::vector<std::int64_t> wave;
    while (wave.size() < static_cast<std::size_t>(kPlanWave)) {
      // The better of the next layout and the best pending candidate.
      const bool have_layout = next_layout < layout_order.size();
      const bool have_candidate = !pending.empty();
      if (!have_layout && !have_candidate) break;
      const double lk = have_layout ? key(layout_key[layout_order[next_layout]]) : 0.0;
      const double ck = have_candidate ? pending.begin()->key : 0.0;
      const bool take_layout = have_layout && (!have_candidate || !better(ck, lk));
      if (take_layout) {
        if (!beats_bar(lk, bar)) {
          if (!have_candidate || !beats_bar(ck, bar)) break;
        } else {
          expand(layout_order[next_layout++]);
          continue;
        }
      }
      if (!beats_bar(ck, bar)) break;
      if (!for_top(ck, bar)) {  // simulated for the reference's rank only
        if (search.reference_limit > 0 && out.reference_simulated >= search.reference_limit) {
          out.reference_capped = true;
          continue;  // the top K's own bar decides from here
        }
        ++out.reference_simulated;
      }
      wave.push_back(pending.begin()->id);
      pending.erase(pending.begin());
    }
    if (wave.empty()) break;
    if (search.stop.stop_requested()) {
      // Stopped between waves: the wave's candidates go back, unsimulated.
      out.stopped = true;
      for (const std::int64_t id : wave) pending.insert({key(expanded.at(id).bound), id});
      break;
    }
    const auto t1 = Clock::now();
    run_parallel(wave.size(), search.jobs, [&](std::size_t w) {
      PlanCandidate& c = expanded.at(wave[w]);
      if (search.resumed)
        if (const auto kept = search.resumed->find(wave[w]); kept != search.resumed->end()) {
          c.row = kept->second;
          return;
        }
      c.row = evaluate_point(candidate_point(layouts, dims, wave[w]), file, search.token_budget,
                             load, {}, step);
    });
    simulate_s += since(t1);
    for (const std::int64_t id : wave) {
      ++out.simulated;
      const PlanCandidate& c = expanded.at(id);
      if (search.resumed && search.resumed->count(id)) ++out.resumed;
      if (search.simulated) search.simulated(c);
      const auto v = objective_value(c.row, search.objective);
      if (c.row.status != SweepStatus::ok || !v) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), *v,
                                   [&](double a, double b) { return better(a, b); }),
                  *v);
      // Better than its own bound beyond rounding: the bound is wrong (header).
      if (c.bound && better_beyond_rounding(*v, *c.bound)) out.violations.push_back(id);
    }
  }
  out.simulate_wall_s = simulate_s;

  const Key bar = kth();
  const std::string objective(config::sweep_objective_names().name(search.objective));
  for (const Pending& item : pending) {
    const std::int64_t id = item.id;
    SweepResult& r = expanded.at(id).row;
    r.message = fmt::format("at best {} {:.6g}: cannot beat the top {}'s last, {:.6g}", objective,
                            *expanded.at(id).bound, search.top, *bar);
    ++out.bounded;
  }
  out.bounded_unexpanded =
      static_cast<std::int64_t>(layout_order.size() - next_layout) * per_layout;
  for (auto& [id, c] : expanded) out.candidates.push_back(std::move(c));
  std::sort(out.violations.begin(), out.violations.end());
  out.violations.erase(std::unique(out.violations.begin(), out.violations.end()),
                       out.violations.end());
  return out;
}

}  // namespace moesim::predict
