// hw_models/ep_buffers.hpp: GPU memory the EP dispatch libraries preallocate, as
// Megatron-Core creates them for training. Read from the libraries' code
// (deepseek-ai/DeepEP 567632dd, csrc/config.hpp, deep_ep/buffer.py, csrc/deep_ep.cpp;
// DeepEP branch hybrid-ep 94a9f8f6, csrc/hybrid_ep/config.cuh, buffer/intranode.cu,
// buffer/internode_doca.cu, extension/allgather.cu; Megatron-Core fused_a2a.py).
//
// DeepEP normal mode (Megatron never uses low-latency mode in training): per-channel
// ring buffers, independent of the tokens per rank. With R EP ranks, nvl = min(R, 8),
// rdma = max(R / 8, 1), ch = SMs / 2 channels, hidden_bytes = H x 2 (Megatron:
// H x max(element size, 2)), and the recv sizes of DeepEP's per-R dispatch and combine
// configs (NVL recv tokens 256 at R <= 8, 288 at 16-64, 480 / 560 / 720 above; RDMA recv
// 128 tokens, rounded up to a multiple of the RDMA send chunk: 20 at R = 16, 8 above):
//   NVL  = ch nvl (2 rdma + 3) 4 + ch nvl recv (hidden_bytes + 8 + 128 x 8 + 128 x 4 + 128 x 4)
//   RDMA = ch rdma 18 x 2 x 4 + ch rdma rrecv (hidden_bytes + 8 + 128 x 8 + 128 x 4 + 128 x 4 + 16)
//   x 2
//          (R > 8 only), each rounded up to 128 bytes, plus a 32 MiB workspace.
//   (a token slot reserves room for 128 top-k indices and weights and 128 scales). EP64 at
//   20 SMs: 360 + 320 + 32 MiB. NVSHMEM's own heap overhead is not counted.
// HybridEP: buffers for the worst case, every token of every EP rank arriving at one rank:
// MT = max_tokens x R, max_tokens = T rounded up to 64 (at least 512):
//   tokens MT H x (1 FP8, 2 BF16) + probabilities MT x (local experts x ranks per domain) x 4
//   + FP8 scales MT x H/128 x 4 + the routing-map all-gather E x MT bytes;
// across domains (nodes = R / ranks per domain) the RDMA staging: dispatch T (H dt +
// E 4 + H/128 4) + T (nodes - 1)(H dt + local x rpd x 4 + H/128 x 4), combine
// 2 T (nodes - 1)(H 2 + local x rpd x 4). EP32 in one NVL72 domain, 4096 tokens: 1.93 GiB.
// NCCL's dispatchers hold no buffers of their own.
#pragma once

#include <cstdint>

#include "hw_models/dispatcher.hpp"

namespace moesim::hw_models {

struct EpBufferQuery {
  Dispatcher dispatcher = Dispatcher::alltoall;
  std::int64_t ranks = 1;             // EP ranks
  std::int64_t ranks_per_domain = 1;  // of them in one NVLink domain
  std::int64_t hidden = 0;
  std::int64_t experts = 0;
  double tokens_per_rank = 0;  // tokens each rank dispatches per microbatch
  int sms = 0;                 // DeepEP: SMs given to it
  bool fp8 = false;            // HybridEP: FP8 token buffers
};

double ep_buffer_bytes(const EpBufferQuery& q);

}  // namespace moesim::hw_models
