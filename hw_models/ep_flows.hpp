// hw_models/ep_flows.hpp: DeepEP / HybridEP normal-kernel dispatch and combine as flows
// over the topology (issue #5, item 4).
//
// Routing as in the libraries' benchmarks (docs/research/ep-benchmark-definitions.md):
// every token picks `groups` of the N NVLink domains (node-limited routing, the domains
// uniform; all of them when groups >= N) and then its top-k experts uniformly among the
// experts of the chosen domains (E/R per rank). So
//   P(domain n receives a token) = (M/N) (1 - C(P - E/N, k) / C(P, k)),   P = M E / N
//   P(rank r receives a token)   = (M/N) (1 - C(P - E/R, k) / C(P, k))
// A model's own group-limited routing (`expert_groups` G contiguous blocks of experts,
// `expert_topk_groups` G' of them a token, Megatron-Core's moe_router_num_groups and
// moe_router_group_topk) replaces it: P(rank) = D_G(R) / R and P(domain) = D_G(N) / N, with
// D_G the expected distinct destinations of hw_models::expected_destination_ranks over the
// groups (DeepSeek-V3 at EP8 inside one domain: one group a rank, D 3.63 of 8 ranks where
// uniform routing gives 5.25; at EP32 over 4 domains of 8: D 3.09 domains where node-limiting
// to G' N / G = 2 of them gave 2).
// Flows from each rank s, per dispatch (combine is the same flows reversed, BF16):
//   to every other rank d of its own domain:           T P_rank h e   (NVLink)
//   to each other domain n, once, by RDMA to the GPU of s's rail in n (the gateway):
//                                                       T P_domain h e (NIC, network)
//   from that gateway to every other rank d of n:       T P_rank h e   (NVLink forwarding)
// Link capacities are scaled by the library's achieved fractions, and each GPU's flows
// share the throughput of the kernel's SMs, and each RDMA flow is capped by what one
// connection to a peer carries (EpFractions; all fitted by calibration/ep_fit.hpp). The time is the
// makespan plus the preset's base latency. The benchmarks' bandwidths are reported on their own
// bytes:
//   NVLink ("NVL", HybridEP "algorithm"): what a rank receives, its own copy included,
//     T R P_rank h e;
//   RDMA: per token, the distinct destination domains, its own included, T N P_domain h e
//     (so the RDMA figure exceeds the NIC's rate by about N / (N - 1)).
#pragma once

#include <string>

#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"
#include "hw_models/topology.hpp"

namespace moesim::hw_models {

struct EpBenchmark {
  int ranks = 8;  // consecutive GPUs 0..ranks-1 of the topology
  int sms = 0;    // SMs the kernel runs on (0: not a limit)
  double tokens = 4096, hidden = 7168;
  double element_bytes = 2;  // BF16 2; FP8 with a 4-byte scale per 128 values 1.03125
  int experts = 256, topk = 8;
  int groups = 4;  // domains a token may use (node-limited routing)
  // The model's group-limited routing (0: none, the node-limited `groups` above).
  int expert_groups = 0, expert_topk_groups = 0;
  bool combine = false;
  // DeepEP's low-latency kernels: every (token, expert) selection is its own message,
  // straight to the expert's GPU, no per-node deduplication and no forwarding; the
  // kernels' fixed cost (launch, completion signalling) replaces the NCCL latency.
  bool low_latency = false;
  double message_bytes = 0;  // per selection (dispatch FP8 7408 B: payload, scales, header)
  double fixed_us = 0;
};

struct EpFractions {
  double nvlink = 1, network = 1;
  // The kernel's SMs: each token copy a GPU pushes (to another rank, to itself, or
  // forwarded) costs copy_us + bytes / (sm_GBps) of one SM's time, so a GPU pushes at
  // most sms x B / (copy_us + B / sm_GBps) bytes/s, B = hidden x element size. 0: no limit.
  double copy_us = 0, sm_GBps = 0;
  // What the library's connection to one peer GPU across domains carries at most (its
  // queue pairs to that peer; NIC bytes/s), 0: no limit. Binds where a GPU has few
  // peers: HybridEP over IB at two nodes has one (fitted by calibration::fit_ep_peer_rate).
  double peer_GBps = 0;
  // What a GPU's kernel copies at most, whatever its SMs (pushed, own and forwarded
  // copies; bytes/s / 1e9), 0: no limit. Combine's reduction (EpLinkParams::combine_hbm_fraction).
  double gpu_GBps = 0;
};

struct EpFlowTime {
  double time_s = 0;
  double nvl_bytes = 0, rdma_bytes = 0;  // the benchmarks' numerators (per rank)
  double nvl_GBps = 0, rdma_GBps = 0;    // their bandwidths (low latency: selections x
                                         // message bytes, DeepEP's "RDMA" figure, in both)
  std::size_t flows = 0;
};

EpFlowTime ep_flow_time(const SystemSpec& s, const Topology& topo, const EpFractions& f,
                        const EpBenchmark& b);

// The link kind of the NVLink part of an EP group with `gpus_in_domain` of its GPUs in
// each NVLink domain: NVLink across trays (mnnvl) where they span more than one node.
EpLink ep_nvlink_kind(const SystemSpec& s, int gpus_in_domain);

// Why library `d` (DeepEP: its normal kernels, or with `low_latency` its low-latency
// ones; HybridEP) cannot run as a group of `ranks` GPUs with `domain` of them per NVLink
// domain; empty when it can. NCCL's dispatchers run anywhere.
std::string ep_unsupported(const SystemSpec& s, Dispatcher d, bool low_latency, int ranks,
                           int domain);

// The library's parameters for one direction of its kernels on a group of `ranks` GPUs
// with `domain` per NVLink domain, applied through the system's own links: the NVLink
// kind's fraction (and for combine its reduction's share of the GPU's HBM), the RDMA kind's
// fraction and peer share of the NIC's line rate where the group crosses domains, and the SM
// throughput of the kind that binds the kernel (RDMA across domains, else the NVLink kind). With a
// per-EP- size table (sm_by_ranks) the rate for `ranks` and the payload (element_bytes 2: BF16,
// else FP8; combine its own) is interpolated linearly in SM seconds per byte between
// the measured sizes (a size without a rate counts 0: no limit), held beyond the first
// and last. Uncalibrated (the system has no parameters for the library): the links at
// their full rates and no SM limit. Throws std::invalid_argument where the placement is
// unsupported (ep_unsupported) or the library's profile has no parameters for a link
// kind the group uses.
EpFractions ep_library_fractions(const SystemSpec& s, Dispatcher d, bool low_latency, bool combine,
                                 int ranks, int domain, double element_bytes = 2);

// A library's dispatch or combine on the GPUs of `topo` as its kernels' flows, with its
// parameters (ep_library_fractions; for the low-latency kernels also their fixed cost):
// the one EP model of `moesim comm` and the step simulation. `bandwidth_factor`
// multiplies the kernels' bandwidth (ep_bandwidth_factor).
EpFlowTime ep_library_time(const SystemSpec& s, const Topology& topo, Dispatcher d, EpBenchmark b,
                           double bandwidth_factor = 1);

// The library kernels' bandwidth over the fitted library's: DeepEP's normal kernels with
// NVIDIA's NVL72 tuning (`deepep_tuned`: stack.deepep_tuned, journey step 7 on) run at the
// system's ep_dispatch.deepep_tuned_factor; everything else at 1.
double ep_bandwidth_factor(const SystemSpec& s, Dispatcher d, bool deepep_tuned);

}  // namespace moesim::hw_models
