// schedules/stage_params.hpp: the parameters one pipeline rank holds for one virtual
// stage: dense parameters (replicated over DP, split by TP) and routed-expert parameters
// (E / ep local experts per MoE layer, split by ETP, replicated over expert-DP). The
// embedding and the output layer count on the stages that hold E and L.
#pragma once

#include <cstdint>

#include <vector>

#include "schedules/pp_layout.hpp"
#include "schedules/schedule_kind.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::schedules {

// What runs for one item of a pipeline stage: the embedding, the output layer and loss,
// a dense or MoE decoder layer, or an MTP module (its decoder layer of the last decoder
// layer's kind, workload::ModelConfig::mtp_is_moe). A hybrid model's layers hold one mixer
// each: `mamba`, `attention`, `moe` (the MoE alone) or `dense` (the MLP alone).
enum class LayerSlot { embedding, head, dense, moe, mtp, mamba, attention };
LayerSlot layer_slot(const LayoutItem& item, const workload::ModelConfig& m);
// Whether the slot's layer has routed experts (an MoE layer, or an MTP module whose
// layer is MoE).
bool has_experts(LayerSlot slot, const workload::ModelConfig& m);

// The template build (workload::DecoderBuild bits) each decoder layer runs, by layer index:
// kBf16Build for Megatron's BF16 first and last layers (Training::bf16_layer), kKeptBuild for
// a layer that partial full recompute leaves whole: the block method recomputes the first
// Framework::recompute_num_layers decoder layers of each virtual stage's block (Megatron-Core
// cd4afffa megatron/core/recompute.py 167-181) and runs the rest as they are.
std::vector<std::uint8_t> decoder_builds(const PipelineLayout& layout,
                                         const workload::ModelConfig& m,
                                         const workload::Training& t, const workload::Framework& f);

// The layer that layout item `item` runs: the embedding, the output layer and the MTP
// modules from `set`; a decoder layer (and a hybrid model's Mamba or attention layer) from
// `builds[layer_builds[item.index]]`, the template build decoder_builds gave that layer. Both
// `set` and a build have the members of workload::ModelTemplates that name them (KernelPricing's
// priced sets alike); `builds` is indexed by workload::DecoderBuild.
template <class Set, class Builds>
const auto& slot_layer(const Set& set, const Builds& builds,
                       const std::vector<std::uint8_t>& layer_builds, const LayoutItem& item,
                       const workload::ModelConfig& m) {
  const LayerSlot slot = layer_slot(item, m);
  switch (slot) {
    case LayerSlot::embedding:
      return set.embedding;
    case LayerSlot::head:
      return set.head;
    case LayerSlot::mtp:
      return set.mtp;
    case LayerSlot::mamba:
    case LayerSlot::attention:
    case LayerSlot::moe:
    case LayerSlot::dense:
      break;
  }
  // Only decoder items hold the remaining slots.
  const auto layer = static_cast<std::size_t>(item.index);
  const auto& build = builds[layer_builds[layer]];
  if (slot == LayerSlot::mamba) return build.mamba;
  if (slot == LayerSlot::attention) return build.attention;
  return build.decoder(slot == LayerSlot::moe, m.mixer(item.index));
}

struct StageParams {
  double dense = 0;
  double expert = 0;
  StageParams& operator+=(const StageParams& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
  bool any() const { return dense > 0 || expert > 0; }  // a collective has something to carry
};

// The parameters of one item of a stage (a layer, the embedding or the output layer).
StageParams item_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                            const LayoutItem& item, std::int64_t padded_vocab);
// Muon's Newton-Schulz FLOPs for one item's matrices (workload::muon_ns_flops), before
// the layer-wise distribution deals the matrices out over the (expert-)DP ranks.
StageParams item_muon_flops(const workload::ModelConfig& m, const workload::Parallelism& p,
                            const LayoutItem& item);

// Each item's parameters on one virtual stage, in the stage's order. An MTP module on a
// stage without the embedding holds a copy of the word embedding (counted on the first
// MTP item): Megatron-Core builds one in every model chunk that runs MTP (gpt_model.py:
// `if self.pre_process or self.mtp_process: self.embedding = LanguageModelEmbedding(...)`),
// reduced with the first stage's over the embedding group. DualPipe and DualPipeV put
// the embedding and the MTP modules on one rank and share it physically (DeepSeek-V3
// report, 3.2.1), so they hold no copy.
// `trained`: count only what trains. Under LoRA (workload::Lora) that is each decoder
// layer's (and MTP layer's) adapters, A (hidden x rank) and B (rank x the target's output),
// both split over TP (Megatron-Bridge ParallelLinearAdapter: A column-parallel over the
// rank, B over the output); the base weights, embedding and output layer are frozen.
std::vector<StageParams> stage_item_parameters(const workload::ModelConfig& m,
                                               const workload::Parallelism& p,
                                               const VirtualStage& stage, std::int64_t padded_vocab,
                                               ScheduleKind schedule,
                                               const workload::Lora* trained = nullptr);

// The parameters of one virtual stage of the layout (the one a rank's chunk runs:
// PipelineShape::place(rank, chunk).layout_stage): the sum of stage_item_parameters.
StageParams stage_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                             const VirtualStage& stage, std::int64_t padded_vocab,
                             ScheduleKind schedule, const workload::Lora* trained = nullptr);

// One decoder layer's LoRA adapter parameters on a TP rank (the A and B of each target).
double lora_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                       const workload::Lora& lora);

}  // namespace moesim::schedules
