// hw_models/comm_cost.hpp: time of one communication operation, seen from one rank.
//
// CommModel is the interface the step simulation prices communication through. Two
// implementations: FlowComm (hw_models/flow_comm.hpp: NCCL's algorithms as flows over
// the topology, sharing links max-min; what `moesim run` uses) and AlphaBetaComm below,
// the closed form kept for fixed-chunk pipeline studies (`moesim pipeline`):
//   t = alpha + bytes_on_the_wire / bw,   alpha = base latency + hops x hop latency
//   all-to-all:               bytes_on_the_wire = S (n-1)/n            (S = bytes sent per rank)
//   all-gather/reduce-scatter: bytes_on_the_wire = S (n-1)/n, n-1 steps (S = full buffer)
//   send/recv:                bytes_on_the_wire = S, one hop
// bw is the per-GPU NVLink bandwidth per direction (the measured usable figure where the
// preset has one) for groups inside one NVLink domain, else the GPU's NIC bandwidth
// (docs/reference/hardware-and-microbenchmarks.md, 'NCCL cost structure').
#pragma once

#include <cstdint>

#include "hw_models/system.hpp"

namespace moesim::hw_models {

struct CommGroup {
  std::int64_t size = 1;
  bool crosses_network = false;  // some members sit in another NVLink domain
  std::int64_t stride = 1;       // global-rank distance between consecutive members
};

class CommModel {
 public:
  virtual ~CommModel() = default;
  virtual double all_to_all(double bytes_per_rank, const CommGroup& g) const = 0;
  virtual double all_gather(double buffer_bytes, const CommGroup& g) const = 0;
  virtual double reduce_scatter(double buffer_bytes, const CommGroup& g) const = 0;
  // `pair`: size 2, the stride from sender to receiver.
  virtual double send_recv(double bytes, const CommGroup& pair) const = 0;
};

class AlphaBetaComm final : public CommModel {
 public:
  explicit AlphaBetaComm(const SystemSpec& s);
  double all_to_all(double bytes_per_rank, const CommGroup& g) const override;
  double all_gather(double buffer_bytes, const CommGroup& g) const override;
  double reduce_scatter(double buffer_bytes, const CommGroup& g) const override;
  double send_recv(double bytes, const CommGroup& pair) const override;

  double bandwidth_Bps(bool crosses_network) const;
  double hop_s(bool crosses_network) const;

 private:
  double nvlink_Bps_, network_Bps_, base_s_, nvlink_hop_s_, network_hop_s_;
};

}  // namespace moesim::hw_models
