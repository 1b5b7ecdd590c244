// predict/step_input.hpp (internal to predict/): a scenario's step-simulation input and
// communication model, as predict() simulates them and the plan's bound
// (predict/plan.hpp) prices them, so that both see the same step.
#pragma once

#include "config/scenario.hpp"
#include "hw_models/flow_comm.hpp"
#include "schedules/step_sim.hpp"

namespace moesim::predict::detail {

// `par`: the scenario's parallelism, or a copy with fewer microbatches (steady state).
// The input refers to the scenario and to `par`, which must outlive it.
inline schedules::StepInput step_input(const config::Scenario& sc, const workload::Parallelism& par,
                                       double ep_load) {
  return {sc.system,
          sc.gpus,
          sc.placement.gpus_per_nvlink_domain,
          sc.model,
          sc.training,
          par,
          sc.framework,
          sc.stack,
          sc.layout,
          sc.pipeline_schedule,
          sc.padded_vocab(),
          ep_load};
}

inline hw_models::FlowComm flow_comm(const config::Scenario& sc, hw_models::FlowCache* cache) {
  return {sc.system, sc.gpus, sc.placement.gpus_per_nvlink_domain, sc.parallelism.pp, cache};
}

}  // namespace moesim::predict::detail
