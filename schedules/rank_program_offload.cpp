// schedules/rank_program_offload.cpp: layer offloading (framework.offload_layers), as
// TransformerEngine's CPU offload runs it for Megatron-Core (transformer_engine/pytorch/
// cpu_offload.py at 4329ff84, TE 2.17; the path TE 2.10 on takes, docs/research/
// cpu-layer-offloading.md 2.2). With L decoder layers and N offloaded (the first N):
//   forward   after layer i < N, its saved tensors are copied to host memory on one copy
//             stream (each copy behind the compute that made it); the forward of layer
//             L - N + i waits for layer i's copy, so at most L - N layers' activations are
//             on the GPU (the memory side is predict/memory.cpp);
//   backward  when layer L - 1 - N + i's backward starts, layer i's copy back is queued on
//             the same stream behind the compute launched so far; layer i's backward waits
//             for it.
// A copy moves the layer's saved bytes at the host link's rate (system.node.host_link_GBps,
// one direction each way) on the copy engines (no SMs). Megatron allows it only at pp 1,
// so every rank runs one chunk and the microbatches' forward and backward in turn.
#include "schedules/rank_program_detail.hpp"

namespace moesim::schedules::detail {

int RankProgram::offloaded_layer(const Lane& l, int k) const {
  if (sim_.fixed() || sim_.in().framework.offload_layers <= 0 || l.item < 0) return -1;
  const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
  if (it.pass == Pass::backward_weight) return -1;
  const auto& stage = sim_.in().layout.stages()[static_cast<std::size_t>(place(it).layout_stage)];
  const LayoutItem& li = stage.items[static_cast<std::size_t>(k)];
  if (li.kind != LayoutItemKind::decoder) return -1;
  return static_cast<int>(li.index);
}

void RankProgram::offload_copy(Lane& l, int layer, bool out) {
  const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
  const auto& stage = sim_.in().layout.stages()[static_cast<std::size_t>(place(it).layout_stage)];
  const LayoutItem* li = nullptr;
  for (const auto& x : stage.items)
    if (x.kind == LayoutItemKind::decoder && x.index == layer) li = &x;
  const double bytes = li ? price_.layer(*li).saved_bytes : 0;
  Kernel k = kernel(sim_.label(out ? "offload.d2h" : "offload.h2d"), kOffload,
                    bytes / (sim_.in().system.node.host_link_GBps.value * 1e9), -1);
  k.waits[0] = l.first ? l.gate : lane_done(l);
  k.record = sim_.event(kOffload);
  auto& events = out ? offload_out_ : offload_in_;
  events[static_cast<std::size_t>(it.microbatch)][static_cast<std::size_t>(layer)] = k.record;
  stream_last_[kOffloadStream] = k.record;  // a device sync waits for the copies in flight
  launch(kOffloadStream, k, op_cost());
}

void RankProgram::offload_before(Lane& l, int k) {
  const int layer = offloaded_layer(l, k);
  if (layer < 0) return;
  const WorkItem& it = items_[static_cast<std::size_t>(l.item)];
  const int L = static_cast<int>(sim_.in().model.num_layers);
  const int N = static_cast<int>(sim_.in().framework.offload_layers);
  if (offload_out_.empty()) {
    const auto m = static_cast<std::size_t>(sim_.in().parallelism.num_microbatches);
    offload_out_.assign(m, std::vector<EventId>(static_cast<std::size_t>(N), kNoEvent));
    offload_in_ = offload_out_;
  }
  const auto mb = static_cast<std::size_t>(it.microbatch);
  if (it.forward()) {
    if (layer >= L - N)
      l.offload_gate = offload_out_[mb][static_cast<std::size_t>(layer - (L - N))];
    return;
  }
  // Backward: queue the copy back of layer i = layer - (L - 1 - N), then wait for this
  // layer's own.
  const int i = layer - (L - 1 - N);
  if (i >= 0 && i < N) offload_copy(l, i, false);
  if (layer < N) l.offload_gate = offload_in_[mb][static_cast<std::size_t>(layer)];
}

void RankProgram::offload_after(Lane& l, int k) {
  const int layer = offloaded_layer(l, k);
  if (layer < 0 || layer >= sim_.in().framework.offload_layers) return;
  if (items_[static_cast<std::size_t>(l.item)].forward()) offload_copy(l, layer, true);
}

}  // namespace moesim::schedules::detail
