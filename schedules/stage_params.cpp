#include "schedules/stage_params.hpp"

#include <algorithm>

#include "workload/eplb.hpp"
#include "workload/flops.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::schedules {

LayerSlot layer_slot(const LayoutItem& item, const workload::ModelConfig& m) {
  switch (item.kind) {
    case LayoutItemKind::embedding:
      return LayerSlot::embedding;
    case LayoutItemKind::loss:
      return LayerSlot::head;
    case LayoutItemKind::mtp:
      return LayerSlot::mtp;
    case LayoutItemKind::decoder:
      if (m.hybrid()) {
        switch (m.hybrid_layers[static_cast<std::size_t>(item.index)]) {
          case workload::HybridLayer::mamba:
            return LayerSlot::mamba;
          case workload::HybridLayer::attention:
            return LayerSlot::attention;
          case workload::HybridLayer::moe:
            return LayerSlot::moe;
          case workload::HybridLayer::mlp:
            return LayerSlot::dense;
        }
      }
      return m.moe_layer[static_cast<std::size_t>(item.index)] ? LayerSlot::moe : LayerSlot::dense;
  }
  return LayerSlot::dense;
}

std::vector<std::uint8_t> decoder_builds(const PipelineLayout& layout,
                                         const workload::ModelConfig& m,
                                         const workload::Training& t,
                                         const workload::Framework& f) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(m.num_layers), workload::kRecipeBuild);
  for (std::int64_t i = 0; i < m.num_layers; ++i)
    if (t.bf16_layer(i, m.num_layers)) out[static_cast<std::size_t>(i)] |= workload::kBf16Build;
  if (f.recompute_num_layers > 0)
    for (const VirtualStage& stage : layout.stages()) {
      std::int64_t seen = 0;
      for (const LayoutItem& it : stage.items)
        if (it.kind == LayoutItemKind::decoder && seen++ >= f.recompute_num_layers)
          out[static_cast<std::size_t>(it.index)] |= workload::kKeptBuild;
    }
  return out;
}

bool has_experts(LayerSlot slot, const workload::ModelConfig& m) {
  return slot == LayerSlot::moe || (slot == LayerSlot::mtp && m.mtp_is_moe());
}

namespace {
// A layer's parameters (or Newton-Schulz FLOPs) but its routed experts': attention and an
// MLP or the MoE's router and shared expert; a hybrid model's layer, its one mixer's.
// `linear`: the layer's mixer is Gated DeltaNet (an MTP layer's: the last decoder layer's).
double mixer_part(const workload::ModelConfig& m, LayerSlot slot, const workload::LayerParams& l,
                  bool moe, bool linear) {
  if (slot == LayerSlot::mamba) return l.mamba;
  if (slot == LayerSlot::attention) return l.attention;
  if (slot == LayerSlot::mtp && m.hybrid()) {  // its MTP block's layers
    double sum = 0;
    for (const workload::HybridLayer k : m.mtp_pattern)
      sum += k == workload::HybridLayer::mamba       ? l.mamba
             : k == workload::HybridLayer::attention ? l.attention
             : k == workload::HybridLayer::moe       ? l.moe_common
                                                     : l.dense_mlp;
    return sum;
  }
  const double ffn = moe ? l.moe_common : l.dense_mlp;
  return m.hybrid() && slot != LayerSlot::mtp ? ffn : (linear ? l.gdn : l.attention) + ffn;
}

bool linear_mixer(const LayoutItem& it, LayerSlot slot, const workload::ModelConfig& m) {
  if (slot == LayerSlot::mtp) return m.linear(m.num_layers - 1);
  return (slot == LayerSlot::dense || slot == LayerSlot::moe) && m.linear(it.index);
}

// MoE layers in a slot with experts: one, or a hybrid model's MTP block's count.
double moe_layers_in(const workload::ModelConfig& m, LayerSlot slot) {
  if (slot != LayerSlot::mtp || !m.hybrid()) return 1;
  return static_cast<double>(
      std::count(m.mtp_pattern.begin(), m.mtp_pattern.end(), workload::HybridLayer::moe));
}

// The word embedding split over TP and the position table, which is not (Megatron's
// LanguageModelEmbedding).
double embedding_params(const workload::ModelConfig& m, const workload::Parallelism& p,
                        std::int64_t padded_vocab) {
  const double h = static_cast<double>(m.hidden_size);
  return static_cast<double>(padded_vocab) * h / static_cast<double>(p.tp) +
         static_cast<double>(m.learned_positions) * h;
}
}  // namespace

StageParams item_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                            const LayoutItem& it, std::int64_t padded_vocab) {
  const auto lp = workload::layer_parameters(m);
  const double h = static_cast<double>(m.hidden_size);
  const double tp = static_cast<double>(p.tp);
  StageParams s;
  const LayerSlot slot = layer_slot(it, m);
  if (slot == LayerSlot::embedding) {
    s.dense = embedding_params(m, p, padded_vocab);
    return s;
  }
  if (slot == LayerSlot::head) {
    s.dense = static_cast<double>(padded_vocab) * h / tp;
    return s;
  }
  if (it.kind == LayoutItemKind::mtp) s.dense += 2 * h * h + 3 * h;  // the MTP projection and norms
  const bool moe = has_experts(slot, m);
  s.dense += mixer_part(m, slot, lp, moe, linear_mixer(it, slot, m)) / tp;
  // DeepSeek-V4's compressors and indexer (TP 1).
  if (m.is_dsv4() && (slot == LayerSlot::mtp || slot == LayerSlot::dense || slot == LayerSlot::moe))
    s.dense +=
        workload::attention_extra_params(m, slot == LayerSlot::mtp ? m.num_layers : it.index);
  if (moe) {
    // Physical experts per rank: parallelism.eplb's copies hold weights, gradients and
    // optimizer states of their own.
    const double local =
        static_cast<double>(workload::physical_experts(m, p)) / static_cast<double>(p.ep);
    s.expert = local * lp.expert / static_cast<double>(p.etp) * moe_layers_in(m, slot);
  }
  return s;
}

StageParams item_muon_flops(const workload::ModelConfig& m, const workload::Parallelism& p,
                            const LayoutItem& it) {
  StageParams s;
  const LayerSlot slot = layer_slot(it, m);
  if (slot == LayerSlot::embedding || slot == LayerSlot::head) return s;  // Adam's
  const auto ns = workload::muon_ns_flops(m);
  const double h = static_cast<double>(m.hidden_size);
  if (it.kind == LayoutItemKind::mtp)
    s.dense += workload::newton_schulz_flops(2 * h, h);  // eh_proj
  const bool moe = has_experts(slot, m);
  // Tensor-parallel ranks gather each matrix and orthogonalize it whole (redundantly).
  s.dense += mixer_part(m, slot, ns, moe, linear_mixer(it, slot, m));
  if (moe)
    s.expert = static_cast<double>(workload::physical_experts(m, p)) / static_cast<double>(p.ep) *
               ns.expert * moe_layers_in(m, slot);
  return s;
}

double lora_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                       const workload::Lora& lora) {
  const double h = static_cast<double>(m.hidden_size);
  const double r = static_cast<double>(lora.rank);
  double sum = 0;
  if (lora.targets_has(workload::LoraTarget::linear_qkv)) {
    sum += h * r + r * m.qkv_width();
  }
  if (lora.targets_has(workload::LoraTarget::linear_fc1))
    sum += h * r +
           r * static_cast<double>(m.ffn_matrices() - 1) * static_cast<double>(m.ffn_hidden_size);
  return sum / static_cast<double>(p.tp);
}

std::vector<StageParams> stage_item_parameters(const workload::ModelConfig& m,
                                               const workload::Parallelism& p,
                                               const VirtualStage& stage, std::int64_t padded_vocab,
                                               ScheduleKind schedule,
                                               const workload::Lora* trained) {
  std::vector<StageParams> out;
  if (trained) {
    for (const auto& it : stage.items)
      out.push_back({it.kind == LayoutItemKind::decoder || it.kind == LayoutItemKind::mtp
                         ? lora_parameters(m, p, *trained)
                         : 0.0,
                     0.0});
    return out;
  }
  bool copy = !stage.has(LayoutItemKind::embedding) && schedule != ScheduleKind::dualpipe &&
              schedule != ScheduleKind::dualpipev;
  // mtp_repeated_layer: the stage's MTP items run one module, whose parameters the first holds.
  bool mtp_held = false;
  for (const auto& it : stage.items) {
    out.push_back(item_parameters(m, p, it, padded_vocab));
    if (it.kind == LayoutItemKind::mtp && m.hybrid() && m.mtp_repeated_layer) {
      if (mtp_held) out.back() = {};
      mtp_held = true;
    }
    if (it.kind == LayoutItemKind::mtp && copy) {
      out.back().dense += embedding_params(m, p, padded_vocab);
      copy = false;
    }
  }
  return out;
}

StageParams stage_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                             const VirtualStage& stage, std::int64_t padded_vocab,
                             ScheduleKind schedule, const workload::Lora* trained) {
  StageParams s;
  for (const auto& ip : stage_item_parameters(m, p, stage, padded_vocab, schedule, trained))
    s += ip;
  return s;
}

}  // namespace moesim::schedules
