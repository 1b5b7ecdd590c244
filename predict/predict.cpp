#include "predict/predict.hpp"

#include <chrono>

#include "hw_models/flow_comm.hpp"

namespace moesim::predict {

ScenarioSummary summarize(const config::Scenario& sc) {
  ScenarioSummary s;
  const auto vocab = sc.padded_vocab();
  s.params = workload::count_parameters(sc.model, sc.training.mtp_layers, vocab);
  s.flops = workload::megatron_flops_per_token(
      sc.model, {sc.training.seq_length, sc.training.mtp_layers, vocab});
  s.flops_per_token = s.flops.total();
  s.tokens_per_step = static_cast<double>(sc.training.global_batch_size) *
                      static_cast<double>(sc.training.seq_length);
  s.flops_per_step = s.flops_per_token * s.tokens_per_step;
  return s;
}

Prediction predict(const config::Scenario& sc, const schedules::StepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const double ep_load = scenario_ep_load(sc);
  const hw_models::FlowComm comm(sc.system, sc.gpus, sc.placement.gpus_per_nvlink_domain,
                                 sc.parallelism.pp);
  const schedules::StepInput in{sc.system,
                                sc.gpus,
                                sc.placement.gpus_per_nvlink_domain,
                                sc.model,
                                sc.training,
                                sc.parallelism,
                                sc.framework,
                                sc.stack,
                                sc.layout,
                                sc.pipeline_schedule,
                                sc.padded_vocab(),
                                ep_load};
  Prediction p;
  p.ep_load = ep_load;
  p.step = schedules::simulate_step(in, opt, comm);
  const ScenarioSummary s = summarize(sc);
  p.flops_per_step = s.flops_per_step;
  const double gpus = static_cast<double>(sc.gpus);
  p.tflops_per_gpu = s.flops_per_step / (p.step.step_time_s * gpus * 1e12);
  p.tokens_per_s_per_gpu = s.tokens_per_step / (p.step.step_time_s * gpus);
  p.mfu = p.tflops_per_gpu / sc.system.gpu.peak_tflops(hw_models::Dtype::bf16);
  MemoryEstimate m = estimate_memory(sc, ep_load);
  p.rank_memory_gib = std::move(m.rank_memory_gib);
  p.cuda_graphs_per_rank = std::move(m.cuda_graphs_per_rank);
  p.graph_static_gib = std::move(m.graph_static_gib);
  p.peak_memory_gib = m.peak_memory_gib;
  p.peak_memory_parts = m.peak_parts;
  p.reserved_memory_gib = m.reserved_memory_gib;
  p.fits_in_memory = m.fits_in_memory;
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

double predicted_metric(const config::Measured& m, const Prediction& p) {
  switch (m.metric) {
    case config::MeasuredMetric::tflops_per_gpu:
      return p.tflops_per_gpu;
    case config::MeasuredMetric::step_time_s:
      return p.step.step_time_s;
    case config::MeasuredMetric::tokens_per_s_per_gpu:
      return p.tokens_per_s_per_gpu;
  }
  return 0;
}

}  // namespace moesim::predict
