#include "schedules/step_bound.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "schedules/kernel_pricing.hpp"

namespace moesim::schedules {

using detail::KernelPricing;
using detail::LabelTable;
using detail::Priced;

StepBound step_lower_bound(const StepInput& in, const hw_models::CommModel& comm,
                           hw_models::FlowCache* ep_cache) {
  LabelTable labels;
  const KernelPricing price(in, comm, labels, nullptr, ep_cache);
  const auto& p = in.parallelism;
  const int pp = static_cast<int>(p.pp);
  const PipelineShape shape(in.schedule, pp, static_cast<int>(p.vpp));
  const double sms = std::max(1.0, in.system.gpu.sm_count.value);
  const auto stage_of = [&](int rank, int chunk) -> const VirtualStage& {
    return in.layout.stages()[static_cast<std::size_t>(shape.place(rank, chunk).layout_stage)];
  };
  // One pass of a rank's chunk, from its layer kernels (header): their SM-seconds over the
  // GPU's SMs, their plain seconds (an unpaired pass runs them all on the compute stream, but
  // the shared expert's under its overlap, beside it: Priced::side), and their launches' host
  // seconds but captured kernels' (a graph's launch, left out, stands for them).
  struct PassCost {
    double work = 0, serial = 0, host = 0;
  };
  std::map<std::tuple<int, int, Pass>, PassCost> pass_cache;
  const auto pass_cost = [&](int rank, int chunk, Pass pass) -> const PassCost& {
    auto [it, inserted] = pass_cache.try_emplace({rank, chunk, pass});
    if (!inserted) return it->second;
    PassCost& c = it->second;
    for (const auto& item : stage_of(rank, chunk).items)
      for (const Priced& k : price.layer(item).of(pass)) {
        if (k.sms >= 0)
          c.work += (k.sms == 0 ? sms : std::min<double>(k.sms, sms)) * k.seconds / sms;
        if (!k.side) c.serial += k.seconds;
        if (!price.captured(k.module)) c.host += k.host_s;
      }
    return c;
  };
  const bool muon = in.framework.optimizer == workload::OptimizerKind::muon;
  // The step's end on the compute stream (rank_program_dp.cpp's step_end): in launch order,
  // one after another.
  const auto step_end = [&](int rank) {
    StageParams all, ns;
    bool loss = false;
    for (int c = 0; c < shape.chunks(); ++c) {
      all += stage_parameters(in.model, p, stage_of(rank, c), in.padded_vocab, in.schedule,
                              in.training.lora ? &*in.training.lora : nullptr);
      if (muon)
        for (const auto& it : stage_of(rank, c).items) ns += item_muon_flops(in.model, p, it);
      loss = loss || shape.place(rank, c).layout_stage == shape.layout_stages() - 1;
    }
    const double unscale = workload::loss_scaled(in.training.precision)
                               ? price.unscale_seconds(all) + price.world_reduce_seconds()
                               : 0.0;
    return unscale + price.grad_norm_seconds(all) + price.world_reduce_seconds() +
           price.clip_seconds(all) + (loss ? price.loss_reduce_seconds() : 0.0) +
           price.optimizer_seconds(all, ns);
  };
  const bool edges =
      in.schedule == ScheduleKind::one_f_one_b || in.schedule == ScheduleKind::interleaved_1f1b;
  const double o0 = step_end(0);
  StepBound best;
  double fwd_before = 0, bwd_after = 0;  // F_r and B_r: virtual stages 0 .. r-1, model chunk 0
  for (int r = 0; r < pp; ++r) {
    double w = 0, h = 0, serial = 0;
    const auto items =
        pipeline_order(in.schedule, pp, static_cast<int>(p.vpp), r,
                       static_cast<int>(p.num_microbatches), in.framework.moe_a2a_overlap);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const WorkItem& it = items[i];
      const PassCost& c = pass_cost(r, it.chunk, it.pass);
      w += c.work;
      h += c.host;
      const bool paired = it.overlap_next || (i > 0 && items[i - 1].overlap_next);
      if (!paired) serial += c.serial;
    }
    const double o = step_end(r);
    const double layers = std::max(w, serial);
    double device = layers + o, e = 0;
    if (edges) {
      e = fwd_before + bwd_after;
      device = std::max(device, fwd_before + layers + std::max(o, bwd_after + o0));
    }
    const double t = std::max(device, h);
    if (r == 0 || t > best.step_time_s) best = {t, r, layers, e, o, h};
    // Microbatch 0's forward and the last one's backward run unpaired (pipeline_order.hpp).
    fwd_before += pass_cost(r, 0, Pass::forward).serial;
    bwd_after += pass_cost(r, 0, Pass::backward).serial;
  }
  return best;
}

}  // namespace moesim::schedules
