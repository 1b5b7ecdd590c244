// schedules/step_sim.hpp: one training step, simulated.
//
// Builds the engine for a scenario: one representative rank per pipeline stage (ranks of
// a stage are identical under balanced routing, so one stands for all; their collectives
// complete when the representative arrives), each with a host thread and GPU streams:
//   compute   every layer kernel in launch order, EP and TP communication included
//             (Megatron runs them serialized on the compute stream without a2a overlap)
//   pp.*      pipeline send/recv, one stream per direction and side, paired across ranks
//   dp        distributed-optimizer reduce-scatter / all-gather, overlapped
// The host walks the rank's work items lazily (pipeline_order), paying launch and op
// costs; CUDA-graph-captured modules cost one graph launch; dropless MoE makes the host
// wait for token counts. The step ends when the last rank finishes its optimizer step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/comm_cost.hpp"
#include "hw_models/compute.hpp"
#include "hw_models/system.hpp"
#include "schedules/pipeline_order.hpp"
#include "schedules/pp_layout.hpp"
#include "schedules/schedule_kind.hpp"
#include "workload/layer_graph.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::hw_models {
class FlowCache;  // hw_models/flow_cache.hpp
}

namespace moesim::schedules {

struct StepInput {
  const hw_models::SystemSpec& system;
  std::int64_t gpus;
  std::int64_t gpus_per_nvlink_domain;
  const workload::ModelConfig& model;
  const workload::Training& training;
  const workload::Parallelism& parallelism;
  const workload::Framework& framework;
  const workload::StackSwitches& stack;
  const PipelineLayout& layout;
  ScheduleKind schedule;
  std::int64_t padded_vocab;
  double ep_load = 1;  // the hottest EP rank's tokens over the balanced (workload/routing.hpp)
};

struct StepOptions {
  bool trace = false;  // keep every kernel and host op for a Chrome/Perfetto trace
  // Simulate every rank instead of one representative per pipeline stage; collectives
  // then rendezvous all members of their group (EP, TP, DP) and each rank pairs its
  // pipeline transfers with the same-position rank of the neighbouring stage. Under
  // balanced routing both modes agree; the full mode is the check of that claim. Under
  // uneven routing (StepInput::ep_load) every rank is priced as the hottest EP rank,
  // which gates each EP collective and so every rank's layer.
  bool full_fidelity = false;
  // predict(): simulate two shorter runs of the step and extrapolate in the microbatches
  // where the step is long enough (predict/predict.hpp, steady_state_microbatches). The
  // step simulation itself ignores it.
  bool steady_state = true;
  // Flow-model results (EP library flows, collective shapes) kept across the simulations
  // of one search over one system (hw_models/flow_cache.hpp; `moesim plan`); null:
  // priced afresh.
  hw_models::FlowCache* flow_cache = nullptr;
};

// The communication a stream waited for or ran: EP dispatch and combine (and their
// counts exchange), TP collectives, pipeline transfers, DP gradient and parameter
// collectives, and layer offloading's copies to and from host memory.
enum class CommKind : std::uint8_t { ep, tp, pp, dp, offload };
inline constexpr std::size_t kCommKinds = 5;
const sim_core::NameTable<CommKind>& comm_kind_names();
// The name of a slot of the breakdown's module arrays: the module's, or "outside_layers".
std::string breakdown_module_name(std::size_t slot);

// Seconds of the critical rank's step by what its compute stream was doing. The six
// categories add up to the step time; the arrays split them further:
//   compute         = sum compute_by_module
//   exposed_comm    = sum exposed_comm_by_kind
//   host_bound_idle = sum host_bound_by_module
//   pipeline_bubble = schedule_bubble + stage_imbalance, where schedule_bubble is the
//     idle time of the same schedule (pp, vpp, microbatches, transfers) with every chunk
//     at this rank's mean forward and backward chunk time (simulate_pipeline), at most
//     pipeline_bubble; stage_imbalance, the rest, is waiting on slower stages.
//   straggler_wait: what the step waits, beyond the simulated ranks, for the latest of all
//     processes and DP replicas (predict/variability.hpp; 0 out of the simulation).
// Module arrays: index Module; the last slot holds kernels outside the layers
// (pipeline transfers, DP, optimizer).
struct Breakdown {
  double compute = 0;          // compute kernels running
  double exposed_comm = 0;     // communication on the critical path (EP, TP, waiting on DP)
  double pipeline_bubble = 0;  // idle, waiting for another pipeline stage
  double host_bound_idle = 0;  // idle, the host had not launched the next kernel yet
  double other = 0;
  double straggler_wait =
      0;  // waiting for the slowest process or replica (predict/variability.hpp)
  double schedule_bubble = 0;
  double stage_imbalance = 0;
  std::array<double, workload::kModuleCount + 1> host_bound_by_module{};
  std::array<double, workload::kModuleCount + 1> compute_by_module{};
  std::array<double, kCommKinds> exposed_comm_by_kind{};
  // Every field in a fixed order, for code that combines breakdowns field by field
  // (steady-state extrapolation, differences).
  std::vector<double> flat() const {
    std::vector<double> v;
    fields(*this, [&](double x) { v.push_back(x); });
    return v;
  }
  void assign_flat(const std::vector<double>& v) {
    std::size_t i = 0;
    fields(*this, [&](double& x) { x = v.at(i++); });
  }

 private:
  template <class B, class F>
  static void fields(B& b, F&& f) {
    f(b.compute), f(b.exposed_comm), f(b.pipeline_bubble), f(b.host_bound_idle), f(b.other),
        f(b.straggler_wait);
    f(b.schedule_bubble), f(b.stage_imbalance);
    for (auto& x : b.host_bound_by_module) f(x);
    for (auto& x : b.compute_by_module) f(x);
    for (auto& x : b.exposed_comm_by_kind) f(x);
  }
};

struct TraceSpan {
  int rank;
  int track;  // stream index, or -1 for the host thread
  std::uint32_t label;
  std::uint32_t context = 0;  // StepResult::contexts id; 0: none (optimizer, DP, host bookkeeping)
  std::uint32_t link =
      0;  // a pipeline transfer: 1 + its rendezvous, shared by the send and the receive
  double start_s, end_s;
  std::uint8_t comm = 0;  // 0: computes (or a host op); 1 + CommKind: communicates
};

// When traced: a host's wait on the device done (a device-host sync: the dispatcher's token
// counts, a pipeline transfer's synchronize); `resumed_s`, when the host went on. A wait costs
// no CPU time, so it is no TraceSpan; its context is the work item's where the wait follows a
// layer kernel, else 0.
struct HostWait {
  int rank;
  std::uint32_t context = 0;
  double resumed_s = 0;
};

// What a traced kernel or launch belongs to (TraceSpan::context): its work item's
// microbatch, model chunk and pass, and the layout item (decoder layer, embedding, MTP
// layer or loss) whose kernels it is; a pipeline transfer has no item.
struct TraceContext {
  int microbatch = -1, chunk = -1;
  Pass pass = Pass::forward;
  bool has_item = false;
  LayoutItem item{LayoutItemKind::decoder, -1};
};

// The chunk pass of a layer kernel's label: forward, backward (with recompute) or a
// weight-gradient GEMM; kNoPass for kernels outside the layers.
inline constexpr std::uint8_t kFwd = 0, kBwd = 1, kWgrad = 2, kNoPass = 3;

// What a layer kernel's template says it is, by label id (StepResult::label_kinds); the
// kernels outside the layers (optimizer, DP and PP transfers) and host ops have layer false.
// `module` and `pass` are the label's (kModuleCount and kNoPass outside the layers); a
// launch's host op carries its kernel's label.
struct LabelKind {
  bool layer = false;
  hw_models::KernelClass cls = hw_models::KernelClass::memory;
  workload::CommOp comm = workload::CommOp::none;
  std::size_t module = workload::kModuleCount;
  std::uint8_t pass = kNoPass;
};

struct StepResult {
  double step_time_s = 0;
  int critical_rank = 0;
  Breakdown breakdown;
  std::vector<double> rank_end_s;   // per simulated rank
  std::vector<double> host_busy_s;  // CPU time of each simulated rank's host thread
  int simulated_ranks = 0;
  std::uint64_t events = 0;
  std::uint64_t kernels = 0;
  std::vector<std::string> labels;     // kernel and host-op names, by label id
  std::vector<LabelKind> label_kinds;  // by label id
  std::vector<std::string> streams;    // stream names, by track
  std::vector<TraceSpan> trace;        // when requested
  std::vector<HostWait> host_waits;    // when requested (trace)
  std::vector<TraceContext> contexts;  // when tracing: by TraceSpan::context ([0]: none)
};

StepResult simulate_step(const StepInput& in, const StepOptions& opt,
                         const hw_models::CommModel& comm);

// The pipeline schedule alone: every stage is one kernel of fwd_s / bwd_s per microbatch
// (a zero-bubble backward splits into bwd_s - wgrad_s and wgrad_s; DualPipe's overlapped
// forward-backward pair takes fwd_bwd_s, fwd_s + bwd_s when 0), transfers between stages
// take p2p_s, hosts cost nothing. For closed-form checks and `moesim pipeline`.
struct FixedChunks {
  double fwd_s = 0;
  double bwd_s = 0;
  double p2p_s = 0;
  double wgrad_s = 0;
  double fwd_bwd_s = 0;
  // One pass of one stage, and the overlapped pair.
  double seconds(Pass p) const {
    switch (p) {
      case Pass::forward:
        return fwd_s;
      case Pass::backward:
        return bwd_s;
      case Pass::backward_input:
        return bwd_s - wgrad_s;
      case Pass::backward_weight:
        return wgrad_s;
    }
    return bwd_s;
  }
  double pair_s() const { return fwd_bwd_s > 0 ? fwd_bwd_s : fwd_s + bwd_s; }
};
struct PipelineResult {
  double step_time_s = 0;
  // The idle time of the busiest rank: step time less the work of its items (never negative:
  // the engine's picosecond rounding is clamped where it is computed).
  double bubble_s = 0;
  int stages = 0;  // per pipeline: pp x vpp; DualPipe pp (two pipelines); DualPipeV 2 pp
  std::uint64_t events = 0;
};
// `pp`: pipeline ranks (devices), as Megatron's pipeline-parallel size; the DualPipe
// repository's PP (stages) is pp for DualPipe and 2 pp for DualPipeV. Throws
// std::invalid_argument for sizes the schedule cannot run.
PipelineResult simulate_pipeline(ScheduleKind kind, int pp, int vpp, int microbatches,
                                 const FixedChunks& c);

}  // namespace moesim::schedules
