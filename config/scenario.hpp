// config/scenario.hpp: one training run to predict, fully resolved and validated.
// The file format is the contract in docs/SCENARIO_FORMAT.md (schema/scenario.schema.json).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/system.hpp"
#include "schedules/pp_layout.hpp"
#include "schedules/schedule_kind.hpp"
#include "sim_core/names.hpp"
#include "workload/eplb.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"
#include "workload/routing.hpp"

namespace moesim::config {

enum class MeasuredMetric { tflops_per_gpu, step_time_s, tokens_per_s_per_gpu, peak_memory_gib };
const sim_core::NameTable<MeasuredMetric>& measured_metric_names();
// Which of PyTorch's caching-allocator counters a measured peak_memory_gib is: Megatron's
// `memory (MB) | allocated | max allocated | reserved | max reserved` line (MiB,
// megatron/training/utils report_memory) and its TensorBoard `mem-max-allocated-bytes`.
enum class MemoryCounter { max_allocated, max_reserved };
const sim_core::NameTable<MemoryCounter>& memory_counter_names();
// A timing metric (a step time or throughput), as opposed to a memory measurement.
constexpr bool is_timing(MeasuredMetric m) {
  return m != MeasuredMetric::peak_memory_gib;
}

// The kind of decision a measured pair differs in (measured.compare_with; issue #44): what
// `moesim validate` groups the pairs' ratio errors by, and what `plan` names as the evidence
// for a claimed gain of that kind.
enum class Decision {
  ep_overlap,    // 1F1B EP all-to-all overlap (moe_a2a_overlap), delayed wgrad
  tp,            // tensor-parallel degree (with sequence parallelism)
  ep_span,       // EP degree or its span over NVLink domains / nodes
  dispatcher,    // NCCL all-to-all, DeepEP, HybridEP, and their SMs
  cuda_graph,    // CUDA-graph scope
  recompute,     // activation recompute modules or granularity
  mbs,           // micro-batch size
  pipeline,      // PP / VPP depth and the layer split
  zero_overlap,  // distributed optimizer's grad-reduce / param-gather overlap
  release,       // software release (container, library versions)
  system,        // GPU system or network
  scale,         // cluster size at a fixed recipe
  fusion,        // kernel fusions (router, permute, quantize, norm)
  host,          // host-side settings (NUMA binding, host-path trimming)
  precision,     // training precision recipe
  batch,         // global batch size at a fixed layout
  routing,       // forced-balanced routing against the trained router's own (dropless) loads
  layout,        // several layout decisions at once (a family's members)
};
const sim_core::NameTable<Decision>& decision_names();

// One measured pair: this run (B) against another validated run (A) that differs from it in
// one decision, measured by the same team on the same machines. `moesim validate` compares
// the ratio of their per-GPU throughputs, B over A, predicted against measured.
struct MeasuredPair {
  std::string run;  // the other scenario's name
  Decision decision = Decision::layout;
  double tolerance_pct = 5;  // the CI gate on the ratio's error
  std::string source;        // where the pairing is published (empty: the measured block's source)
};

struct Measured {
  MeasuredMetric metric = MeasuredMetric::tflops_per_gpu;
  double value = 0;
  std::string source;
  double tolerance_pct = 5;
  // peak_memory_gib only: the counter it is (required) and the pipeline rank
  // that logged it (absent: the rank with the predicted peak). Megatron's TensorBoard
  // writer is on the last rank (global_vars.py _set_tensorboard_writer), so its
  // mem-max-allocated-bytes are the last pipeline rank's.
  MemoryCounter memory_counter = MemoryCounter::max_reserved;
  std::optional<std::int64_t> pp_rank;
  // Why the run is calibration data elsewhere (its own profile fits component figures):
  // `moesim calibrate corpus` keeps it out of the leave-one-out mean. Empty: a test run.
  std::string in_sample;
  // A fixed-recipe scaling series the run belongs to (one recipe at several sizes):
  // `moesim validate` fits step = a x microbatches + b to the series' measured and
  // predicted steps and compares consecutive sizes' per-GPU throughput. Empty: none.
  std::string series;
  // Why the run is kept for checking and not fitted: `moesim calibrate corpus` leaves it
  // out of the fit and reports its error at the fitted values. Empty: fitted.
  std::string held_out;
  // A family of runs measured by one team on one cluster that differ in several decisions
  // (a layout family): `moesim validate` reports how well the predictions order them
  // (Kendall's tau over the members' pairs) and the regret of the predicted best. Empty: none.
  std::string family;
  // Runs this one is compared with (issue #44 item 1).
  std::vector<MeasuredPair> compare_with;
};

// What a measurement is, as the reports name it: the metric, and for a memory figure its
// counter and pipeline rank ("peak_memory_gib max_allocated pp3").
std::string measured_name(const Measured& m);

// Checkpoint storage (predict/goodput.hpp): aggregate write and read bandwidth of the file
// system, and the bandwidth of one client node (0: no per-node limit), GB/s (1e9 bytes).
struct StorageSpec {
  std::string name;  // the preset's (config/storage.hpp), or "inline"
  double write_GBps = 0, read_GBps = 0, client_GBps = 0;
  std::string source;
};

// A long job's interruptions, checkpoints and restarts (scenario key `goodput`; defaults
// and storage presets in config/storage.hpp, each with its source; the model in
// predict/goodput.hpp).
struct GoodputSettings {
  double interruptions_per_gpu_day = 0;  // unexpected: lose the work since the last checkpoint
  double planned_interruptions_per_gpu_day = 0;  // planned: checkpointed first, cost a restart
  double restart_s =
      0;  // detection, diagnosis, rescheduling and start, before the checkpoint loads
  StorageSpec storage;
  bool async_save = false;                      // Megatron --async-save
  std::optional<double> checkpoint_interval_s;  // absent: Daly's optimum
  std::optional<double> token_budget;           // tokens to train: days with and without goodput
};

// Cost and energy of a job (scenario key `cost`; predict/goodput.hpp): every figure
// optional. Energy needs a node power (this or the system's node.max_power_kW), cost a
// price; both a token budget.
struct CostSettings {
  std::optional<double> node_power_kW;  // overrides system.node.max_power_kW
  std::optional<double> pue;            // facility power over IT power (absent: IT energy only, 1)
  std::optional<double> gpu_hour_usd;   // price of one GPU-hour
};

// Where ranks sit (a moesim extension of the contract): how many GPUs of one NVLink
// domain the job uses. The GB200 journey puts every 32 GPUs (8 trays) in one NVL72
// domain, so EP32 stays inside NVLink. Default: min(domain size, gpus).
struct Placement {
  std::int64_t gpus_per_nvlink_domain = 0;
};

struct Scenario {
  std::string file;  // where it was read from ("<inline>" for text)
  std::string name;
  std::string description;

  hw_models::SystemSpec system;
  std::int64_t gpus = 0;
  Placement placement;
  workload::ModelConfig model;
  workload::Training training;
  workload::Parallelism parallelism;
  schedules::ScheduleKind pipeline_schedule = schedules::ScheduleKind::one_f_one_b;
  std::string pp_layout_text;  // as written; empty when the default split applies
  schedules::PipelineLayout layout;
  workload::Framework framework;
  workload::StackSwitches stack;
  // stack.release as written ("26.02", "custom"; empty: the newest stack) and the switches
  // it left unsettled, taken as on (config/releases.hpp).
  std::string release;
  std::vector<std::string> release_unsettled;
  workload::Routing routing;
  std::optional<Measured> measured;
  GoodputSettings goodput;
  CostSettings cost;
  // The settings the file wrote, as dotted paths of the keys of its training,
  // parallelism, framework, stack, routing and placement objects ("framework.dispatcher_sms"):
  // config/inert_settings.hpp warns about those that change nothing here.
  std::vector<std::string> given_keys;
  // Whether the file wrote `key`, one of those paths.
  bool gave(const std::string& key) const {
    return std::find(given_keys.begin(), given_keys.end(), key) != given_keys.end();
  }
  // `recorded`: settings written as the scenario's source gave them that the writer (`by`,
  // moesim's importer) knew change nothing here (config/inert_settings.hpp): `run` says them
  // in one line.
  std::string recorded_by;
  std::vector<std::string> recorded_inert;

  std::int64_t padded_vocab() const {
    return workload::padded_vocab_size(model.vocab_size, parallelism.tp, training.vocab_divisor);
  }
  // Tokens each EP rank routes per microbatch: mbs x seq / cp.
  double ep_rank_tokens() const {
    return static_cast<double>(training.micro_batch_size * training.seq_length) /
           static_cast<double>(parallelism.cp);
  }
  // How parallelism.eplb runs over the EP group (workload::eplb_setup); absent without it.
  std::optional<workload::EplbSetup> eplb_setup() const {
    return workload::eplb_setup(model, parallelism, placement.gpus_per_nvlink_domain);
  }
  // The hottest EP rank's tokens over the balanced for the scenario's routing, token
  // dropping, EPLB and HybridEP's rank budget (workload::ep_gating_load): what predict()
  // prices the MoE layers at.
  // Padded to capacity, every rank's experts run the capacity (training.pad_to_capacity).
  double ep_load() const {
    if (training.pad_to_capacity && training.capacity_factor && model.is_moe())
      return *training.capacity_factor;
    return workload::ep_gating_load(routing, model, parallelism.ep, ep_rank_tokens(),
                                    training.capacity_factor, eplb_setup(),
                                    framework.moe_expert_rank_capacity_factor);
  }
  // The same without the rank budget: above ep_load(), the budget drops routed copies.
  double ep_load_unbudgeted() const {
    if (training.pad_to_capacity && training.capacity_factor && model.is_moe())
      return *training.capacity_factor;
    return workload::ep_gating_load(routing, model, parallelism.ep, ep_rank_tokens(),
                                    training.capacity_factor, eplb_setup());
  }
};

}  // namespace moesim::config
