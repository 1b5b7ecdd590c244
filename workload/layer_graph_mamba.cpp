// workload/layer_graph_mamba.cpp: a hybrid model's Mamba-2 mixer layer
// (workload/layer_graph_detail.hpp mamba_block), as Megatron-Core runs it in training
// (ssm/mamba_mixer.py 279-292, 498-515, 727-781 at cd4afffa) over state-spaces/mamba's
// Triton SSD kernels (mamba_ssm/ops/triton/ssd_combined.py 343-516, 820-981 at e9594ce1;
// docs/research/nemotron3-hybrid-mamba.md 3):
//   norm (fused into in_proj's TE LayerNormColumnParallelLinear), in_proj [T, h] x
//   [h, 2d + 2GN + H] writing z, x, B, C and dt; the output rearranged and made contiguous
//   (a copy); mamba_split_conv1d_scan_combined: the depthwise causal conv1d over x, B and C
//   (causal-conv1d, SiLU), then five SSD kernels (chunk_cumsum, chunk_state,
//   state_passing, bmm_chunk, chunk_scan with the gate y * silu(z) inside); y rearranged
//   back (a copy); the grouped RMSNorm (RMSNormGated, groups of d / G); out_proj [T, d] x
//   [d, h], row-parallel.
// Per rank, d = heads x head_dim / tp, H = heads / tp, G = groups / tp (Megatron splits
// heads and groups over TP). Only in_proj and out_proj are TE GEMMs, so only they are
// quantized; the conv, the scan and the norm run in BF16 with FP32 states; the conv and
// the norm are priced as HBM traffic, the scan as below.
//
// The SSD kernels' bytes and FLOPs a token are hw_models/chunk_kernels.hpp's (the backward
// recomputes chunk_cumsum, bmm_chunk, chunk_state and state_passing, then runs its eleven
// gradient kernels; their bytes are an estimate); each runs at the slower of its bytes and
// its FLOPs at the GPU's fitted SSD rate (hw_models/compute.hpp scan), and the wrapper
// recomputes and differentiates the conv.
#include "workload/layer_graph_detail.hpp"

namespace moesim::workload::detail {

void mamba_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& x = in.model.mamba;
  const double d = static_cast<double>(x.d_inner()) / s.tp;
  const double heads = static_cast<double>(x.heads) / s.tp;
  const double gn = static_cast<double>(x.groups * x.state) / s.tp;
  const double groups = static_cast<double>(x.groups) / s.tp;
  const double width = 2 * d + 2 * gn + heads;  // z, x, B, C, dt
  const double T = s.T;

  const std::size_t start = b.mark();
  // The norm is in_proj's (TELayerNormColumnParallelLinear: hybrid_layer_specs.py 93-100 at
  // core_v0.19.0); MambaLayer recomputes nothing of its own, so 'layernorm' leaves it.
  const std::size_t bwd_start = b.bwd_mark();
  norm(b, s, Module::mamba, "mamba.norm", in.stack.norm_quant_fusion, in.framework, std::nullopt,
       true);
  b.module_calls_at(start, 2, 0);  // the MambaLayer and its MambaMixer
  tp_gather(b, s, Module::mamba, "mamba", true, SpInput::quantized);
  b.linear("mamba.in_proj", Module::mamba, T, width, s.h, true, false);
  sp_saved_shard(b, s);
  // rearrange(...).contiguous() of the in_proj output (mamba_mixer.py 739); the scan saves
  // this copy (zxbcdt) for its backward.
  b.memory("mamba.layout_in", Module::mamba, T * width * 2 * 2, 1.0, T * width * 2);

  const double conv = T * (d + 2 * gn) * 2 * 2;
  const hw_models::SsdShape shape{heads, static_cast<double>(x.head_dim), groups,
                                  static_cast<double>(x.state), static_cast<double>(x.chunk)};
  const double seqs = static_cast<double>(in.training.micro_batch_size);
  const auto kernels = [&](const std::vector<hw_models::ChunkKernel>& ks) {
    return LayerBuilder::chunk_call(ks, hw_models::KernelClass::scan, T, seqs);
  };
  std::vector<LayerBuilder::MemKernel> fwd{{"conv", conv}}, bwd{{"conv", conv}};
  for (auto&& k : kernels(hw_models::ssd_forward(shape))) fwd.push_back(std::move(k));
  for (auto&& k : kernels(hw_models::ssd_backward(shape))) bwd.push_back(std::move(k));
  // The conv's backward: x and the output gradient in, dx out.
  bwd.push_back({"conv_bwd", 1.5 * conv});
  // out_x, the gate's input, kept for the backward.
  b.memory_kernels("mamba.scan", Module::mamba, fwd, bwd, T * d * 2);
  b.memory("mamba.layout_out", Module::mamba, T * d * 2 * 2);  // y back to [s, b, d] (775)
  b.memory("mamba.gated_norm", Module::mamba, T * d * 2 * 2, 1.5, T * d * 2);
  {
    const LayerBuilder::PrecisionScope own(b,
                                           in.training.precision_of(QuantModule::mamba_out_proj));
    b.linear("mamba.out_proj", Module::mamba, T, s.h, d, true, true);
  }
  tp_scatter(b, s, Module::mamba, "mamba");
  bias_dropout_add(b, in, s, Module::mamba, "mamba", bwd_start);
}

}  // namespace moesim::workload::detail
