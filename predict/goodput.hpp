// predict/goodput.hpp: the share of a long job's wall-clock time that trains (the
// effective training time ratio, ETTR), given its interruptions, checkpoints and restarts
// (issue #26 item 4; the settings, their defaults and the storage presets:
// config/storage.hpp).
//
// With N GPUs and i unexpected interruptions per GPU-day the job is interrupted every
//   M = 86,400 / (i N) seconds (exponential, memoryless).
// A checkpoint holds every parameter once (Megatron's distributed checkpoint writes each
// replica's share once, fully parallel): bf16 weights (2 bytes), the FP32 master (4) and
// the optimizer's states (workload::optimizer_state_bytes: Adam's two moments, Muon's one):
//   C = P (2 + 4 + s) bytes, C / N a GPU.
// Written at W = min(storage write, nodes x client link) GB/s, read back at the same with
// the read figure:
//   save S = C / W_write,  load L = C / W_read.
// What a checkpoint stops training for, delta: S when saved synchronously; with
// --async-save only the copy of each GPU's share to host memory, (C / N) / host link
// (system.node.host_link_GBps), the write running behind training (the interval is then
// at least S, and a checkpoint is usable only once written: S joins the rework after a
// failure).
// A restart costs R = restart_s + L (+ S under async save).
// Daly's optimum interval of work between checkpoints ("A higher order estimate of the
// optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22,
// 2006):
//   tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta   (delta < 2M)
//   tau = M                                                                          (delta >= 2M)
// (Young's sqrt(2 delta M) to first order), rounded to whole steps (at least one), unless
// goodput.checkpoint_interval_s gives it. Daly's expected wall time per unit of work, with
// failures during restarts and rework (same paper), gives
//   ETTR_u = tau / (M e^(R/M) (e^((tau + delta)/M) - 1)),
// each factor to first order 1 / ETTR_u = (1 + delta/tau)(1 + (tau + delta)/2M)(1 + R/M),
// so ETTR_u = 1 - delta/tau - (tau + delta)/2M - R/M to first order. Planned interruptions (p per
// GPU-day, checkpointed first) cost a restart each: ETTR = ETTR_u (1 - p N R / 86,400).
// Days to a token budget B at T tokens/s over the job: B / T / 86,400 without
// interruptions, D = that / ETTR with them.
// Energy and cost over those D wall-clock days (issue #26 item 5; scenario key `cost`):
//   E = nodes x P x PUE x 24 D / 1000 MWh,   cost = GPUs x price x 24 D,
// P the node's power (cost.node_power_kW, else system.node.max_power_kW: the datasheet's
// maximum, an upper bound on what training draws; restarts and checkpoints draw it too),
// PUE cost.pue (absent: 1, the IT energy), price cost.gpu_hour_usd; each absent when
// what it needs is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/scenario.hpp"

namespace moesim::predict {

struct Goodput {
  double mtbi_s = 0;            // M: mean time between unexpected interruptions of the job
  double checkpoint_bytes = 0;  // C
  double checkpoint_bytes_per_gpu = 0;
  double save_s = 0, load_s = 0;  // S, L
  double blocking_s = 0;          // delta
  double restart_s = 0;           // R
  double interval_s = 0;          // tau (whole steps)
  std::int64_t interval_steps = 0;
  bool interval_given = false;  // goodput.checkpoint_interval_s, not Daly's
  double ettr = 1;
  std::optional<double> days, days_without_interruptions;  // to goodput.token_budget
  std::optional<double> node_power_kW;                     // what the energy takes (JobTotals)
  std::optional<double> energy_mwh, cost_usd;              // over `days`
};

// Energy (MWh) and cost (USD) of `wall_days` of the scenario's job (equations above);
// `node_power_kW` the power used, absent without one.
struct JobTotals {
  std::optional<double> node_power_kW, energy_mwh, cost_usd;
};
JobTotals job_totals(const config::Scenario& sc, double wall_days);

// Daly's optimum checkpoint interval and the ETTR of an interval (equations above).
double daly_interval_s(double delta_s, double mtbi_s);
double daly_ettr(double interval_s, double delta_s, double restart_s, double mtbi_s);

// `params`: the model's parameters (workload::count_parameters' total); `step_time_s`
// and `tokens_per_s` (the job's) from the prediction.
Goodput goodput(const config::Scenario& sc, double params, double step_time_s, double tokens_per_s);

}  // namespace moesim::predict
