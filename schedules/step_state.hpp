// schedules/step_state.hpp: the shared state of one step's simulation: the engine with
// its event and rendezvous tables, the kernel and host-op labels, the prices
// (schedules/kernel_pricing.hpp), the pipeline's shape, and the pairing of transfers and
// collectives across the simulated ranks. Internal to the step simulation; the per-rank
// programs (schedules/rank_program.hpp) and the breakdown observer (schedules/
// step_breakdown.hpp) read and extend it.
//
// Rendezvous (sim_core/engine.hpp): a pipeline transfer pairs the sender's and the
// receiver's kernel (by microbatch, virtual stage, direction and lane); the seq-th
// collective of one kind in one group waits for every simulated member of the group. In
// representative mode (one rank per pipeline stage) a group has one simulated member and
// its collectives complete when that member arrives.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "schedules/kernel_pricing.hpp"
#include "sim_core/engine.hpp"

namespace moesim::schedules::detail {

class StepState {
 public:
  StepState(const StepInput& in, const StepOptions& opt, const hw_models::CommModel& comm,
            const FixedChunks* fixed)
      : in_(in),
        opt_(opt),
        events_(engine_),
        pricing_(in, comm, labels_, fixed, opt.flow_cache),
        shape_(in.schedule, static_cast<int>(in.parallelism.pp),
               static_cast<int>(in.parallelism.vpp)) {
    if (!fixed)
      for (const auto& st : in.layout.stages())
        dp_plans_.push_back(schedules::dp_plan(in.model, in.parallelism, in.framework, st,
                                               in.padded_vocab, in.schedule, trained()));
  }
  StepState(const StepState&) = delete;
  StepState& operator=(const StepState&) = delete;

  const StepInput& in() const { return in_; }
  const KernelPricing& pricing() const { return pricing_; }
  const PipelineShape& shape() const { return shape_; }
  bool fixed() const { return pricing_.fixed(); }
  // Every rank simulated (StepOptions::full_fidelity), not one per pipeline stage.
  bool full() const { return opt_.full_fidelity && !fixed(); }
  std::int64_t stage_size() const { return in_.gpus / in_.parallelism.pp; }
  // Whether the ranks run overlapped pairs on a second compute stream (DualPipe's pairs;
  // 1F1B's and interleaved 1F1B's all-to-all overlap, which other schedules ignore:
  // pipeline_order).
  // The shared expert's stream under Framework::moe_shared_expert_overlap is that second
  // stream too (Megatron refuses the two overlaps together).
  bool pair_stream() const {
    const ScheduleKind s = in_.schedule;
    if (s == ScheduleKind::dualpipe || s == ScheduleKind::dualpipev) return true;
    if (shared_stream()) return true;
    return in_.framework.moe_a2a_overlap && !fixed() &&
           (s == ScheduleKind::one_f_one_b || s == ScheduleKind::interleaved_1f1b);
  }
  // Whether MoE layers run their shared expert on a stream of its own.
  bool shared_stream() const {
    return in_.framework.moe_shared_expert_overlap && !fixed() &&
           in_.model.shared_expert_ffn_hidden_size > 0;
  }
  // Whether kernels that nothing can tell apart in the time line may be simulated as one
  // (PricedLayer::merged, and the GPU's coalescing classes): not when the trace shows
  // every kernel, nor beside a second compute stream, whose spans the breakdown's union
  // charges to the module of the later start (a longer span would move time between
  // modules). Fixed chunks (simulate_pipeline) have one kernel a pass already.
  bool merges_kernels() const { return !opt_.trace && !pair_stream() && !fixed(); }
  bool tracing() const { return opt_.trace; }

  std::uint32_t label(const std::string& name) { return labels_.id(name); }
  // A trace context's id (StepResult::contexts); 0 (none) when not tracing.
  std::uint32_t trace_context(const TraceContext& c) {
    if (!opt_.trace) return 0;
    if (contexts_.empty()) contexts_.emplace_back();
    contexts_.push_back(c);
    return static_cast<std::uint32_t>(contexts_.size() - 1);
  }
  std::vector<TraceContext> take_contexts() { return std::move(contexts_); }
  const std::vector<std::string>& labels() const { return labels_.names(); }
  std::vector<LabelKind> label_kinds() const { return labels_.kinds(); }
  std::size_t module_of(std::uint32_t label) const { return labels_.module_of(label); }
  std::uint8_t pass_of(std::uint32_t label) const { return labels_.pass_of(label); }

  sim_core::EventId event(Category c) {
    const sim_core::EventId id = events_.create();
    event_category_.push_back(c);
    return id;
  }
  Category event_category(sim_core::EventId e) const {
    return static_cast<Category>(event_category_[e]);
  }
  sim_core::Time event_done_at(sim_core::EventId e) const { return events_.done_at(e); }

  sim_core::RendezvousId pair(int mb, int vstage, bool fwd, std::int64_t lane) {
    auto [it, inserted] = pairs_.try_emplace(std::make_tuple(mb, vstage, fwd, lane), 0);
    if (inserted) it->second = rendezvous_.create(2);
    return it->second;
  }
  // The seq-th collective of one kind in one group; kNoRendezvous when the group has a
  // single simulated member (representative mode).
  sim_core::RendezvousId collective(Category c, std::int64_t group, std::int64_t seq,
                                    std::int64_t members) {
    if (members <= 1) return sim_core::kNoRendezvous;
    auto [it, inserted] =
        collectives_.try_emplace(std::make_tuple(static_cast<int>(c), group, seq), 0);
    if (inserted) it->second = rendezvous_.create(static_cast<int>(members));
    return it->second;
  }

  // The layout stage a rank's chunk runs (DualPipe: the reverse pipeline's stage pp-1-r).
  const VirtualStage& chunk_stage(int rank, int chunk) const {
    return in_.layout.stages()[static_cast<std::size_t>(shape_.place(rank, chunk).layout_stage)];
  }
  // What trains (stage_params.hpp): every weight, or LoRA's adapters.
  const workload::Lora* trained() const {
    return in_.training.lora ? &*in_.training.lora : nullptr;
  }
  StageParams stage_params(int rank, int chunk) const {
    return stage_parameters(in_.model, in_.parallelism, chunk_stage(rank, chunk), in_.padded_vocab,
                            in_.schedule, trained());
  }
  StageParams muon_flops(int rank, int chunk) const {
    StageParams s;
    for (const auto& it : chunk_stage(rank, chunk).items)
      s += item_muon_flops(in_.model, in_.parallelism, it);
    return s;
  }
  // The data-parallel plan of a rank's chunk (schedules/dp_plan.hpp).
  const DpPlan& dp_plan(int rank, int chunk) const {
    return dp_plans_[static_cast<std::size_t>(shape_.place(rank, chunk).layout_stage)];
  }

  // The engine and its tables, for the GPUs and host threads of the assembly.
  sim_core::Engine& engine() { return engine_; }
  sim_core::EventTable& events() { return events_; }
  sim_core::RendezvousTable& rendezvous() { return rendezvous_; }

 private:
  sim_core::Engine engine_;
  const StepInput& in_;
  const StepOptions& opt_;
  sim_core::EventTable events_;
  sim_core::RendezvousTable rendezvous_;
  LabelTable labels_;
  KernelPricing pricing_;
  PipelineShape shape_;
  std::vector<DpPlan> dp_plans_;  // by layout stage
  std::map<std::tuple<int, int, bool, std::int64_t>, sim_core::RendezvousId> pairs_;
  std::map<std::tuple<int, std::int64_t, std::int64_t>, sim_core::RendezvousId> collectives_;
  std::vector<std::uint8_t> event_category_;
  std::vector<TraceContext> contexts_;
};

}  // namespace moesim::schedules::detail
