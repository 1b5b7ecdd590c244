// predict/comm.hpp: `moesim comm`, the communication model alone: one operation priced
// by the models the step simulation uses (reports/comm.hpp prints the answer).
//
// Collectives (all-reduce, all-gather, reduce-scatter, all-to-all, send-recv) run as
// flows over the system's topology (hw_models/collectives.hpp) on `ranks` consecutive
// GPUs, NVLink domains of `gpus_per_domain` (default: the system's), by ring or NVLS
// (`algorithm`; auto takes the faster where NVLS can run, as NCCL's tuner does), rings with
// one of NCCL's protocols (`protocol`; auto: the faster of LL128 and Simple). EP dispatch and
// combine (ep-dispatch, ep-combine) of DeepEP and HybridEP run as their kernels' flows
// over the topology with the library's parameters (calibration/profiles/ep-<lib>.json)
// applied to the system's links (hw_models/ep_flows.hpp, ep_library_time), routed as the
// libraries' benchmarks route: the model the step simulation prices them with. A
// placement the library cannot run in is bad input. NCCL's dispatchers: the all-to-all
// of the permuted copies (one per expert) over the topology. Bytes and bandwidth are counted as the
// benchmarks count them: inside one NVLink domain what a rank receives, its own copy included;
// across domains (RDMA) the distinct destination domains of each token, its own included. FP8
// carries a 4-byte scale per 128 values: 1.03125 bytes per element.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moesim::predict {

struct CommQuery {
  std::string system;
  std::string op;
  int ranks = 8;
  double bytes = 1 << 30;              // collectives: nccl-tests' size
  std::optional<int> gpus_per_domain;  // absent: the system's NVLink domain
  std::string algorithm = "auto";      // collectives: auto (the faster, as NCCL picks), ring, nvls
  std::string protocol = "auto";  // rings: auto (LL128 or Simple, the faster), ll, ll128, simple
  // EP dispatch / combine
  std::string dispatcher = "deepep";
  int ep = 8;
  double tokens = 4096, hidden = 7168, topk = 8;
  int experts = 256;
  int groups = 0, topk_groups = 0;  // group-limited routing (0: none)
  std::string dtype = "bf16";       // dispatch payload: bf16 or fp8 (combine is BF16)
  std::optional<int> sms;           // absent: the dispatcher's default
  bool low_latency = false;         // DeepEP's low-latency kernels
};

struct CommAnswer {
  std::string op, system, model;
  int ranks = 0;
  double bytes = 0, time_us = 0, latency_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::size_t flows = 0;
  std::string algorithm;  // collectives: the one that ran
  std::string protocol;   // rings: the protocol that ran
  // What the answer is priced beyond (config::system_caveats: an announced system's projection).
  std::vector<std::string> caveats;
};

// Whether `op` names an EP operation (ep-dispatch, ep-combine), which comm prices from the
// EP library's tokens; any other op is a collective.
inline bool is_ep_op(std::string_view op) {
  return op == "ep-dispatch" || op == "ep-combine";
}

// Throws config::InputError (file "<command line>") on an unknown system, op, dispatcher
// dtype or algorithm, NVLS where it cannot run, or sizes that do not fit the system.
CommAnswer comm(const CommQuery& q);

}  // namespace moesim::predict
