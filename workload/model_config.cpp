#include "workload/model_config.hpp"

#include <algorithm>
#include <array>

namespace moesim::workload {

const sim_core::NameTable<AttentionKind>& attention_kind_names() {
  static constexpr std::array<sim_core::NameEntry<AttentionKind>, 3> kEntries{{
      {AttentionKind::gqa, "gqa", "grouped-query attention (MHA when groups = heads)"},
      {AttentionKind::mla, "mla", "multi-head latent attention (DeepSeek-V2/V3)"},
      {AttentionKind::dsv4, "dsv4_hybrid",
       "DeepSeek-V4's MQA over windowed, compressed sparse and heavily compressed keys"},
  }};
  static constexpr sim_core::NameTable<AttentionKind> kTable{kEntries};
  return kTable;
}

const sim_core::NameTable<HybridLayer>& hybrid_layer_names() {
  static constexpr std::array<sim_core::NameEntry<HybridLayer>, 4> kEntries{{
      {HybridLayer::mamba, "M", "Mamba-2 mixer"},
      {HybridLayer::attention, "*", "self-attention"},
      {HybridLayer::moe, "E", "mixture of experts"},
      {HybridLayer::mlp, "-", "dense MLP"},
  }};
  static constexpr sim_core::NameTable<HybridLayer> kTable{kEntries};
  return kTable;
}

std::int64_t ModelConfig::count_hybrid(HybridLayer k) const {
  return std::count(hybrid_layers.begin(), hybrid_layers.end(), k);
}

std::int64_t ModelConfig::num_attention_layers() const {
  return hybrid() ? count_hybrid(HybridLayer::attention) : num_layers - num_linear_layers();
}

std::int64_t ModelConfig::num_linear_layers() const {
  return std::count(linear_layer.begin(), linear_layer.end(), true);
}

std::int64_t ModelConfig::num_moe_layers() const {
  return std::count(moe_layer.begin(), moe_layer.end(), true);
}

bool ModelConfig::any_windowed() const {
  return sliding_window > 0 &&
         std::find(sliding_layer.begin(), sliding_layer.end(), true) != sliding_layer.end();
}

bool ModelConfig::has_mixer(Mixer k) const {
  if (is_dsv4())
    return std::any_of(dsv4.compress_ratios.begin(), dsv4.compress_ratios.end(),
                       [&](std::int64_t r) { return dsv4_mixer(r) == k; });
  switch (k) {
    case Mixer::full:
      return true;
    case Mixer::window:
      return any_windowed();
    case Mixer::linear:
      return num_linear_layers() > 0;
    case Mixer::csa:
    case Mixer::hca:
      break;
  }
  return false;
}

std::int64_t padded_vocab_size(std::int64_t vocab, std::int64_t tp, std::int64_t divisible_by) {
  const std::int64_t multiple = divisible_by * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

}  // namespace moesim::workload
