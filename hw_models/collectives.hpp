// hw_models/collectives.hpp: NCCL collectives as flows over the topology.
//
// Sizes follow nccl-tests: S is the buffer per rank (all-reduce, all-to-all, send/recv)
// or the whole gathered / scattered buffer (all-gather, reduce-scatter). Algorithm
// bandwidth algbw = S / t; bus bandwidth busbw = algbw x 2(n-1)/n for all-reduce,
// x (n-1)/n for all-gather, reduce-scatter and all-to-all, x 1 for send/recv
// (docs/reference/hardware-and-microbenchmarks.md, 'NCCL cost structure').
//
//   ring all-gather / reduce-scatter: n-1 pipelined steps; every rank sends (n-1)/n S
//     to its ring successor. Across NVLink domains NCCL runs one ring per rail
//     (channel c enters each domain at its GPU of rail c and leaves toward the next
//     domain's GPU of rail c), so the channels use different NICs; each channel
//     carries S / channels.
//   Inside one NVLink domain a ring of n GPUs reaches comm.ring_group_efficiency(n) of the
//     rate the links' efficiency gives (measured: 2- and 4-GPU groups reach less of NVLink
//     than 8-GPU ones; XLA's collective table, calibration/measurements/nccl-busbw.json);
//     its flows carry S / that factor.
//   ring all-reduce: reduce-scatter then all-gather: 2(n-1) steps, 2 (n-1)/n S per rank.
//   all-to-all: every rank sends S/n to every other rank. NCCL runs it as grouped
//     point-to-point transfers, which inside an NVLink domain reach alltoall_efficiency of
//     the rings' rate on the same links (fitted from one NVLink all-to-all bus bandwidth);
//     those flows carry S / (n alltoall_efficiency) so that they take that longer. Across
//     domains the rank's peers in its own domain and those in the others are priced as two
//     phases whose times add, the network flows at S/n (no NVLink factor):
//       t = makespan(own domain's peers) + makespan(other domains' peers)
//     An empirical choice: Megatron-Core's EP table on DGX H100 (EP 16-64) gives one NIC rate
//     at every EP size only with the two parts added (docs/research/ep-benchmark-definitions.md
//     6). NCCL's p2p schedule does not explain it (each node's group of peers gets channels of
//     its own, which run at once), and why the parts add is not known.
//   send/recv: one flow of S.
//   NVLS all-reduce (NVLink SHARP; all ranks in one NVSwitch domain, on systems whose
//     preset has nvls_efficiency; across domains where the network has in-network
//     reduction, network.sharp, as NCCL's NVLS needs CollNet there): each GPU fetches the sum of
//     its 1/n of the buffer with a multimem load-reduce (the switch pulls every GPU's copy: S out
//     of each GPU over all chunks, S/n in) and multicasts it with a multimem store (S/n out, S in).
//     So each GPU's NVLink port carries S (n+1)/n each way, against 2 (n-1)/n S for a ring, and
//     busbw = 2 (n-1)/(n+1) x the port's rate x nvls_efficiency, NCCL's own factor for
//     the switch's reduction (nvlsEfficiency: Hopper 0.85, Blackwell 0.74). The flows
//     run GPU to ring successor so that every port carries one; latency nvls_latency_us
//     (NCCL's NVLS hop, base 0). NCCL picks NVLS where it is faster (fastest_collective_time).
//     Across D domains of k GPUs each GPU's shard of S/k, summed over its domain by the
//     switch, is reduced over the domains by the network's switches (SHARP): its NIC
//     sends S/k up and receives S/k down, modeled as a ring of the same-rail GPUs of the
//     domains carrying S/k per flow beside the NVLink flows (NCCL pipelines the two);
//     latency nvls_latency_us + 18 us (NCCL's network NVLS latency, tuning.cc).
// Time = latency + the flows' makespan (hw_models/flows.hpp), with
//   latency = base + steps x hop,  hop = network hop when the group spans NVLink
//   domains, else NVLink hop.
// Rings run one of NCCL's three protocols (NVIDIA/nccl src/graph/tuning.cc @ 5067397c,
// ncclTunerConstantsDefaults and the "model refinements" of ncclTopoTuneModel):
//   Simple: the preset's base / hop latencies, the full link rate;
//   LL128:  base 14 us, NVLink hop 1.9 us, network hop 4 us; 120 of every 128 bytes are
//           payload (0.92 of the rate);
//   LL:     base 6.6 us, NVLink hop 0.6 us, network hop 2.7 us; half the bytes are flags
//           (0.5 of the rate), and the bus bandwidth at most NCCL's llMaxBw (Hopper 141,
//           Blackwell 282 GB/s on one node; 45 and 90 on two, 35 and 70 on more).
// Unless asked for one, a ring takes the faster of LL128 and Simple. LL is left out of
// that choice: NCCL's tuner would pick it below a few MB, but on 8 x H200 its model
// (28 us for a 1 MiB all-reduce) is 40% faster than the measured all-reduce (46 us),
// which LL128's model matches (calibration/measurements/nccl-busbw.json); no measurement
// here shows LL at its model's speed. LL128's per-channel cap (36.7 GB/s on Hopper x
// channels) is not applied: moesim has no channel count, and on NVLink the 0.92 binds
// first. All-to-all and send/recv run Simple (NCCL's point-to-point transfers).
// The flows reach eta x link capacity (SystemSpec::comm efficiencies, fitted by
// calibration/link_fit.hpp from measured bus bandwidths). Tree algorithms
// and NVLS across domains (NVLS-tree, SHARP in the network) are not modeled.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw_models/flows.hpp"
#include "hw_models/system.hpp"
#include "hw_models/topology.hpp"
#include "sim_core/names.hpp"

namespace moesim::hw_models {

enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
const sim_core::NameTable<Collective>& collective_names();
enum class CollectiveAlgorithm { ring, nvls };
const sim_core::NameTable<CollectiveAlgorithm>& algorithm_names();
enum class Protocol { ll, ll128, simple };
const sim_core::NameTable<Protocol>& protocol_names();

struct CollectiveTime {
  double time_s = 0;
  double latency_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::size_t flows = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  Protocol protocol = Protocol::simple;
};

// busbw / algbw for `op` over n ranks.
double bus_factor(Collective op, double n);

// The flows of one collective and its latency term (NCCL's base + steps x hop).
struct CollectiveFlows {
  std::vector<Flow> flows;
  // Priced after `flows`: an all-to-all's transfers to other NVLink domains.
  std::vector<Flow> later;
  double latency_s = 0;
  // Adds another group's flows, each to its own part (the latency stays).
  void append(const CollectiveFlows& o) {
    flows.insert(flows.end(), o.flows.begin(), o.flows.end());
    later.insert(later.end(), o.later.begin(), o.later.end());
  }
};
// The makespan of `flows` plus that of `later`, each simulated on its own.
double phased_makespan(const Topology& topo, const CollectiveFlows& cf, const LinkEfficiency& eff);
// `algo` ring stands for each collective's own pattern (ring, all-to-all, send/recv).
// Simple protocol; ring_protocol_time prices the others from the same flows.
CollectiveFlows collective_flows(const SystemSpec& s, const Topology& topo, Collective op,
                                 const std::vector<int>& ranks, double bytes,
                                 CollectiveAlgorithm algo = CollectiveAlgorithm::ring);
// Whether `op` is one of NCCL's rings, which have the three protocols.
bool has_protocols(Collective op);
// A ring's time under protocol `p`, from its Simple flows' makespan and latency: the
// makespan over the protocol's payload fraction (max-min shares scale with the bytes),
// under LL at least the bytes over llMaxBw, plus the protocol's latency for the same
// steps. `steps` and `spans` as the ring has them; `nodes` the NVLink domains it spans.
double ring_protocol_time(const SystemSpec& s, Collective op, Protocol p, double simple_makespan_s,
                          double bytes, double ranks, bool spans, int nodes);

// Whether NVLS can run the collective: an all-reduce of ranks in one NVLink domain on a
// system with NVLS.
bool nvls_supported(const SystemSpec& s, const Topology& topo, Collective op,
                    const std::vector<int>& ranks);

// `ranks` are GPU ids of `topo`, in group order; send/recv uses the first two. Throws
// std::invalid_argument for NVLS where nvls_supported is false.
// `proto`: a ring's protocol; absent, the fastest.
CollectiveTime collective_time(const SystemSpec& s, const Topology& topo, Collective op,
                               const std::vector<int>& ranks, double bytes,
                               CollectiveAlgorithm algo = CollectiveAlgorithm::ring,
                               std::optional<Protocol> proto = std::nullopt);
// NCCL's choice: the faster of the algorithms that can run the collective.
CollectiveTime fastest_collective_time(const SystemSpec& s, const Topology& topo, Collective op,
                                       const std::vector<int>& ranks, double bytes);

// The preset's link efficiencies (1 where absent).
LinkEfficiency link_efficiency(const SystemSpec& s);

// A latency-bound all-reduce of a few bytes (FP8 amax buffers, the gradient norm, the
// logged loss) over `ranks` GPUs, `per_domain` of them in each NVLink domain: NCCL's tree
// (a chain inside each domain, a binary tree across domains) with the LL protocol, whose
// latency (NVIDIA/nccl src/graph/tuning.cc, docs/reference/scale-and-goodput.md 5):
//   t = base + 2 ((k - 1) x NVLink hop + log2(D) x network hop),  k = per_domain,
//   D = ceil(ranks / k), LL: base 6.6 us, NVLink hop 0.6 us, network hop 2.7 us;
// the payload's transfer is negligible. The flows model (above) has no tree; this closed
// form prices only these tiny collectives.
double small_all_reduce_seconds(double ranks, double per_domain);

}  // namespace moesim::hw_models
