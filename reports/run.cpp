#include "reports/run.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/assumptions.hpp"
#include "config/caveats.hpp"
#include "config/inert_settings.hpp"
#include "config/releases.hpp"
#include "predict/bands.hpp"
#include "predict/memory.hpp"
#include "workload/layer_graph.hpp"
#include "workload/routing.hpp"

namespace moesim::reports {

using Json = nlohmann::ordered_json;
std::vector<std::pair<std::string, double>> by_module(const ModuleSeconds& seconds) {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t m = 0; m < seconds.size(); ++m)
    out.emplace_back(schedules::breakdown_module_name(m), seconds[m]);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

namespace {
Json named(const std::vector<std::pair<std::string, double>>& v) {
  Json j = Json::object();
  for (const auto& [name, seconds] : v) j[name] = seconds;
  return j;
}
}  // namespace

namespace {
// Bytes in decimal units, as storage is sold and measured.
std::string bytes_text(double b) {
  if (b >= 1e12) return fmt::format("{:.2f} TB", b / 1e12);
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  return fmt::format("{:.1f} MB", b / 1e6);
}

std::string duration_text(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 120) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.2g} s", s);
}

std::string goodput_text(const config::Scenario& sc, const predict::Goodput& g) {
  const auto& s = sc.goodput;
  std::string o = fmt::format(
      "\ngoodput          ETTR {:.3f} (the share of wall-clock time that trains)\n", g.ettr);
  o += fmt::format(
      "  interruptions  {} ({:.3g} a GPU-day unexpected, {:.3g} planned)\n",
      std::isfinite(g.mtbi_s) ? "one every " + duration_text(g.mtbi_s) : std::string("none"),
      s.interruptions_per_gpu_day, s.planned_interruptions_per_gpu_day);
  o += fmt::format(
      "  checkpoint     {} ({} a GPU) to {} ({:g} GB/s write, {:g} read{}): save {}, load {}; "
      "training stops {} a checkpoint{}\n",
      bytes_text(g.checkpoint_bytes), bytes_text(g.checkpoint_bytes_per_gpu), s.storage.name,
      s.storage.write_GBps, s.storage.read_GBps,
      s.storage.client_GBps > 0 ? fmt::format(", {:g} a node", s.storage.client_GBps)
                                : std::string(),
      duration_text(g.save_s), duration_text(g.load_s), duration_text(g.blocking_s),
      s.async_save ? " (async save)" : "");
  if (g.interval_steps > 0)
    o += fmt::format("  interval       every {} steps ({}{}); a restart costs {}\n",
                     g.interval_steps, duration_text(g.interval_s),
                     g.interval_given ? ", as given" : ", Daly's optimum",
                     duration_text(g.restart_s));
  if (g.days)
    o += fmt::format(
        "  token budget   {:.3g} tokens in {:.1f} days ({:.1f} without interruptions)\n",
        *s.token_budget, *g.days, *g.days_without_interruptions);
  if (g.energy_mwh || g.cost_usd) {
    std::string what;
    if (g.energy_mwh)
      what += fmt::format(
          "{:.4g} MWh ({} kW a node{}{})", *g.energy_mwh, *g.node_power_kW,
          sc.cost.node_power_kW ? "" : ", the system's maximum",
          sc.cost.pue ? fmt::format(", PUE {:g}", *sc.cost.pue) : std::string(", IT load"));
    if (g.cost_usd)
      what += fmt::format("{}{} USD at {:g} a GPU-hour", what.empty() ? "" : "; ",
                          *g.cost_usd >= 1e6 ? fmt::format("{:.2f} million", *g.cost_usd / 1e6)
                                             : fmt::format("{:.0f}", *g.cost_usd),
                          *sc.cost.gpu_hour_usd);
    o += fmt::format("  to the budget  {}\n", what);
  }
  if (g.days && !g.energy_mwh)
    o += "  to the budget  no energy: the system has no node.max_power_kW; give "
         "cost.node_power_kW\n";
  return o;
}

Json goodput_json(const predict::Goodput& g) {
  Json j{{"ettr", g.ettr},
         {"mtbi_s", std::isfinite(g.mtbi_s) ? Json(g.mtbi_s) : Json(nullptr)},
         {"checkpoint_bytes", g.checkpoint_bytes},
         {"checkpoint_bytes_per_gpu", g.checkpoint_bytes_per_gpu},
         {"save_s", g.save_s},
         {"load_s", g.load_s},
         {"blocking_s", g.blocking_s},
         {"restart_s", g.restart_s},
         {"interval_s", g.interval_steps > 0 ? Json(g.interval_s) : Json(nullptr)},
         {"interval_steps", g.interval_steps},
         {"interval_given", g.interval_given}};
  if (g.days) {
    j["days"] = *g.days;
    j["days_without_interruptions"] = *g.days_without_interruptions;
  }
  if (g.energy_mwh) j["energy_mwh"] = *g.energy_mwh;
  if (g.cost_usd) j["cost_usd"] = *g.cost_usd;
  return j;
}
}  // namespace

Json bands_json(const config::Scenario& sc, const predict::Prediction& p) {
  const auto band =
      predict::corpus_step_band(p.step.step_time_s, sc.system.gpu.name, sc.model.name);
  if (band.pool == 0) return nullptr;
  const double t = p.step.step_time_s;
  return {{"step_time_s", {band.lo, band.hi}},
          {"tokens_per_s_per_gpu",
           {p.tokens_per_s_per_gpu * t / band.hi, p.tokens_per_s_per_gpu * t / band.lo}},
          {"tflops_per_gpu", {p.tflops_per_gpu * t / band.hi, p.tflops_per_gpu * t / band.lo}},
          {"level", band.level},
          {"runs", band.pool},
          {"basis", band.basis}};
}

Json run_json(const config::Scenario& sc, const predict::Prediction& p) {
  const auto& b = p.step.breakdown;
  Json j;
  j["name"] = sc.name;
  j["file"] = sc.file;
  j["step_time_s"] = p.step.step_time_s;
  j["step_time_p50_s"] = p.step_time_p50_s;
  j["step_time_p95_s"] = p.step_time_p95_s;
  // How far the model is from measurements like it: its error, not the run-to-run spread p50/p95
  // give.
  if (Json bands = bands_json(sc, p); !bands.is_null()) j["bands"] = std::move(bands);
  j["tflops_per_gpu"] = p.tflops_per_gpu;
  j["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
  j["mfu"] = p.mfu;
  j["mfu_peak"] = "dense bf16";
  j["peak_memory_gib"] = p.peak_memory_gib;
  // A rank's memory by part, keyed as MemoryParts::named() names them.
  const auto parts_json = [](const predict::MemoryParts& mp) {
    Json o = Json::object();
    for (const auto& [name, gib] : mp.named()) o[name] = gib;
    return o;
  };
  j["peak_memory_parts_gib"] = parts_json(p.peak_memory_parts);
  j["reserved_memory_gib"] = p.reserved_memory_gib;
  j["fits_in_memory"] = p.fits_in_memory;
  j["ep_load"] = p.ep_load;
  j["ep_load_unbudgeted"] = p.ep_load_unbudgeted;
  j["breakdown"] = {{"compute", b.compute},
                    {"exposed_communication", b.exposed_comm},
                    {"pipeline_bubble", b.pipeline_bubble},
                    {"host_bound_idle", b.host_bound_idle},
                    {"other", b.other},
                    {"straggler_wait", b.straggler_wait},
                    {"schedule_bubble", b.schedule_bubble},
                    {"stage_imbalance", b.stage_imbalance}};
  // The slowest process and DP replica (predict/variability.hpp).
  const auto& sp = p.spread;
  j["stragglers"] = {{"process_jitter_s", sp.jitter_wait_s},
                     {"routing_s", sp.routing_wait_s},
                     {"processes", sp.processes},
                     {"ep_groups", sp.ep_groups},
                     {"ep_load_cv", sp.load_cv}};
  j["goodput"] = goodput_json(p.goodput);
  j["host_bound_idle_by_module"] = named(by_module(b.host_bound_by_module));
  j["compute_by_module"] = named(by_module(b.compute_by_module));
  Json comm = Json::object();
  for (std::size_t k = 0; k < schedules::kCommKinds; ++k)
    comm[std::string(schedules::comm_kind_names().name(static_cast<schedules::CommKind>(k)))] =
        b.exposed_comm_by_kind[k];
  j["exposed_communication_by_kind"] = comm;
  j["critical_rank"] = p.step.critical_rank;
  j["rank_memory_gib"] = p.rank_memory_gib;
  // Per pipeline rank: the parts, and PyTorch's two counters (what Megatron logs).
  Json rank_parts = Json::array();
  for (const auto& rp : p.rank_memory_parts) rank_parts.push_back(parts_json(rp));
  j["rank_memory_parts_gib"] = rank_parts;
  j["rank_max_allocated_gib"] = p.rank_max_allocated_gib;
  j["rank_max_reserved_gib"] = p.rank_max_reserved_gib;
  j["cuda_graphs"] = {{"per_rank", p.cuda_graphs_per_rank},
                      {"static_buffers_gib", p.graph_static_gib}};
  j["host_busy_s"] = p.step.host_busy_s;
  j["simulation"] = {
      {"events", p.step.events},
      {"kernels", p.step.kernels},
      {"wall_s", p.wall_s},
      {"fidelity", p.step.simulated_ranks == sc.parallelism.pp && sc.gpus != sc.parallelism.pp
                       ? "representative"
                       : "full"},
      {"simulated_ranks", p.step.simulated_ranks}};
  // Settings the file gave that change nothing here (config/inert_settings.hpp).
  Json warnings = Json::array();
  for (const auto& w : config::inert_setting_warnings(sc))
    warnings.push_back({{"setting", w.setting}, {"reason", w.reason}, {"recorded", w.recorded}});
  j["warnings"] = warnings;
  // What is priced beyond its evidence (config/caveats.hpp).
  j["caveats"] = config::prediction_caveats(sc);
  // What the scenario left unsaid and the prediction assumed, and what is accepted but not
  // priced (config/assumptions.hpp).
  Json assumed = Json::array();
  for (const auto& a : config::scenario_assumptions(sc))
    assumed.push_back(
        {{"setting", a.setting}, {"assumed", a.assumed}, {"why", a.why}, {"instead", a.instead}});
  j["assumptions"] = assumed;
  Json unpriced = Json::array();
  for (const auto& u : config::unpriced_settings(sc))
    unpriced.push_back({{"setting", u.setting}, {"what", u.what}});
  j["not_priced"] = unpriced;
  if (!sc.release.empty())
    j["release"] = {{"name", sc.release}, {"notes", config::release_warnings(sc)}};
  if (sc.measured) {
    const double pred = predict::predicted_metric(*sc.measured, p);
    j["measured"] = {{"metric", config::measured_metric_names().name(sc.measured->metric)},
                     {"what", config::measured_name(*sc.measured)},
                     {"value", sc.measured->value},
                     {"predicted", pred},
                     {"error_pct", 100 * (pred - sc.measured->value) / sc.measured->value}};
  }
  return j;
}

std::string caveats_text(const std::vector<std::string>& caveats, std::string_view heading) {
  if (caveats.empty()) return "";
  std::string o = fmt::format("{} (priced beyond what was measured):\n", heading);
  for (const auto& c : caveats) o += fmt::format("  {}\n", c);
  return o;
}

std::string run_text(const config::Scenario& sc, const predict::Prediction& p) {
  const auto& b = p.step.breakdown;
  const double t = p.step.step_time_s;
  std::string o = fmt::format("{}  ({})\n\n", sc.name, sc.file);
  o += fmt::format("step time        {:.3f} s\n", t);
  if (const auto band = predict::corpus_step_band(t, sc.system.gpu.name, sc.model.name);
      band.pool > 0)
    o += fmt::format("                 {:.3f} - {:.3f} s: the model's {:.0f}% band, from {}\n",
                     band.lo, band.hi, 100 * band.level, band.basis);
  o += fmt::format("TFLOPS/GPU       {:.1f}   (Megatron accounting)\n", p.tflops_per_gpu);
  o += fmt::format("tokens/s/GPU     {:.1f}\n", p.tokens_per_s_per_gpu);
  o += fmt::format("MFU              {:.1f}%  (of dense BF16 {:g} TFLOPS)\n", 100 * p.mfu,
                   sc.system.gpu.peak_tflops(hw_models::Dtype::bf16));
  const double frag = sc.framework.allocator_fragmentation;
  // One unit (issue #27 item 6): GiB, the GPU's capacity as CUDA reports it.
  o += fmt::format("peak memory      {:.1f} GiB{} of the GPU's {:g} GiB  ({})\n", p.peak_memory_gib,
                   frag > 0 ? fmt::format(", {:.1f} reserved with {:g}% fragmentation",
                                          p.reserved_memory_gib, 100 * frag)
                            : std::string(),
                   sc.system.gpu.usable_GiB.value, p.fits_in_memory ? "fits" : "DOES NOT FIT");
  o += fmt::format(
      "                 weights+grads {:.1f}, optimizer {:.1f}, activations {:.1f}, graph buffers "
      "{:.1f}, EP "
      "buffers {:.1f}, CUDA context and NCCL/TE buffers {:.1f}\n",
      p.peak_memory_parts.weights_grads, p.peak_memory_parts.optimizer,
      p.peak_memory_parts.activations, p.peak_memory_parts.graph_buffers,
      p.peak_memory_parts.ep_buffers, p.peak_memory_parts.runtime);
  const auto [reserve_lo, reserve_hi] = std::minmax_element(
      predict::kMeasuredAllocatorReserve.begin(), predict::kMeasuredAllocatorReserve.end());
  if (const double room =
          predict::allocator_room(p.peak_memory_parts, sc.system.gpu.usable_GiB.value);
      frag == 0 && p.fits_in_memory && room < *reserve_lo)
    o += fmt::format(
        "                 fits only if the caching allocator reserves under {:.1f}% beyond the "
        "peak; "
        "measured {:.1f}-{:.1f}% (Megatron-LM PR 1913): framework.allocator_fragmentation prices "
        "it\n",
        100 * room, 100 * *reserve_lo, 100 * *reserve_hi);
  if (p.ep_load != 1)
    o += fmt::format("EP load          {:.3f} x balanced on the hottest EP rank (routing: {})\n",
                     p.ep_load, workload::routing_balance_names().name(sc.routing.balance));
  if (p.ep_load_unbudgeted > p.ep_load)
    o += fmt::format(
        "                 {:.3f} before the rank budget (moe_expert_rank_capacity_factor {:g}): "
        "the hottest rank "
        "drops {:.1f}% of its routed tokens\n",
        p.ep_load_unbudgeted, sc.framework.moe_expert_rank_capacity_factor.value_or(0),
        100 * (1 - p.ep_load / p.ep_load_unbudgeted));
  if (const auto most =
          std::max_element(p.cuda_graphs_per_rank.begin(), p.cuda_graphs_per_rank.end());
      most != p.cuda_graphs_per_rank.end() && *most > 0)
    o += fmt::format(
        "CUDA graphs      {} per GPU at most (static buffers {:.2f} GiB, in the memory above)\n",
        *most, *std::max_element(p.graph_static_gib.begin(), p.graph_static_gib.end()));
  o += fmt::format("\nbreakdown of the critical rank ({}):\n", p.step.critical_rank);
  const auto row = [&](const char* what, double s) {
    o += fmt::format("  {:<22}{:>9.3f} s  {:>5.1f}%\n", what, s, 100 * s / t);
  };
  row("compute", b.compute);
  row("exposed communication", b.exposed_comm);
  row("pipeline bubble", b.pipeline_bubble);
  if (b.pipeline_bubble > 0)
    o += fmt::format("    the schedule's own {:.3f} s, waiting on slower stages {:.3f} s\n",
                     b.schedule_bubble, b.stage_imbalance);
  row("host-bound idle", b.host_bound_idle);
  std::string where;
  for (const auto& [module, seconds] : by_module(b.host_bound_by_module))
    if (seconds >= 0.0005 * t)
      where += fmt::format("{}{} {:.3f} s", where.empty() ? "" : ", ", module, seconds);
  if (!where.empty()) o += fmt::format("    before kernels of: {}\n", where);
  row("other", b.other);
  row("straggler wait", b.straggler_wait);
  if (b.straggler_wait > 0)
    o += fmt::format(
        "    the latest of {} processes {:.3f} s{}; over steps: median {:.3f} s, p95 {:.3f} s\n",
        p.spread.processes, p.spread.jitter_wait_s,
        p.spread.routing_wait_s > 0 ? fmt::format(", the slowest of {} EP groups' routing {:.3f} s",
                                                  p.spread.ep_groups, p.spread.routing_wait_s)
                                    : std::string(),
        p.step_time_p50_s, p.step_time_p95_s);
  o += goodput_text(sc, p.goodput);
  if (sc.measured) {
    const double pred = predict::predicted_metric(*sc.measured, p);
    o += fmt::format("\nmeasured {} = {:g}; predicted {:.2f} ({:+.1f}%)\n",
                     config::measured_name(*sc.measured), sc.measured->value, pred,
                     100 * (pred - sc.measured->value) / sc.measured->value);
  }
  {
    std::vector<std::string> recorded;
    std::string given;
    for (const auto& w : config::inert_setting_warnings(sc)) {
      if (w.recorded)
        recorded.push_back(w.setting);
      else
        given += fmt::format("  {}: {}\n", w.setting, w.reason);
    }
    if (!given.empty()) o += "\nwarnings (settings given that change nothing here):\n" + given;
    if (!recorded.empty())
      o += fmt::format(
          "\n{} setting{} recorded as the source gave {} change nothing here ({}; --json says "
          "why): {}\n",
          recorded.size(), recorded.size() == 1 ? "" : "s", recorded.size() == 1 ? "it" : "them",
          sc.recorded_by, fmt::join(recorded, ", "));
  }
  if (const auto assumed = config::scenario_assumptions(sc); !assumed.empty()) {
    o += "\nassumptions (the scenario does not say; give the setting to change one, --json lists "
         "the "
         "alternatives):\n";
    std::size_t width = 0;  // the longest setting name, then two spaces before what is assumed
    for (const auto& a : assumed) width = std::max(width, a.setting.size());
    for (const auto& a : assumed)
      o += fmt::format("  {:<{}}  {} ({})\n", a.setting, width, a.assumed, a.why);
  }
  if (const auto unpriced = config::unpriced_settings(sc); !unpriced.empty()) {
    o += "\nnot priced (accepted, priced in part):\n";
    for (const auto& u : unpriced) o += fmt::format("  {}: {}\n", u.setting, u.what);
  }
  if (const auto caveats = caveats_text(config::prediction_caveats(sc)); !caveats.empty())
    o += fmt::format("\n{}", caveats);
  if (const auto notes = config::release_warnings(sc); !notes.empty()) {
    o += fmt::format("\nrelease {}:\n", sc.release);
    for (const auto& n : notes) o += fmt::format("  {}\n", n);
  }
  o += fmt::format("\nsimulated {} ranks, {} kernels, {} events in {:.3f} s\n",
                   p.step.simulated_ranks, p.step.kernels, p.step.events, p.wall_s);
  return o;
}

}  // namespace moesim::reports
