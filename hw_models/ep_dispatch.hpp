// hw_models/ep_dispatch.hpp: time of one expert-parallel dispatch or combine, per
// dispatcher, as registered implementations.
//
//   NCCL all-to-all:  t = alpha + S (n-1)/n / busbw           (measured all-to-all bus bandwidth)
//   DeepEP, HybridEP: t = alpha + S / (bw_measured x min(1, sms / sms_saturation) x tuned)
// S is the bytes a rank sends (routed token copies x hidden x element size). The
// libraries' figures are measured algorithm bandwidths at one SM count; below the SM
// count where the published benchmarks saturate, bandwidth falls in proportion (a per-SM
// throughput limit). Without a measurement for the system, the link-bandwidth
// alpha-beta model of CommModel applies. The network issue replaces these tables by a
// topology and flow model.
#pragma once

#include "hw_models/comm_cost.hpp"
#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"

namespace moesim::hw_models {

struct EpQuery {
  double bytes = 0;   // sent per rank
  CommGroup group;
  int sms = 0;        // SMs given to the dispatcher (DeepEP, HybridEP)
  bool combine = false;
  bool tuned = false; // the library is tuned for the system (EpBandwidth::tuned_factor)
};

double ep_comm_seconds(Dispatcher d, const SystemSpec& sys, const CommModel& comm, const EpQuery& q);

}  // namespace moesim::hw_models
