// workload/layer_graph_pieces.cpp: the pieces the layer templates share
// (workload/layer_graph_detail.hpp): the sequence-parallel gather and scatter around a TP
// linear, LoRA's adapters, offloading marks, hidden dropout and the norms.
#include <string>

#include "workload/layer_graph_detail.hpp"

namespace moesim::workload::detail {

bool tp_gather(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name, bool ub,
               SpInput input, double width) {
  if (s.tp <= 1) return true;
  const double w = width > 0 ? width : s.h;
  const bool quantized = s.sequence_parallel() && b.fp8() && input != SpInput::bf16;
  if (quantized && input == SpInput::quantize)
    b.quantize(name + ".sp_quant", mod, s.Tn * w, 1, false, true);
  b.comm(name + ".sp_gather", mod, CommOp::tp_all_gather, CommOp::tp_reduce_scatter, s.T * w * 2);
  if (quantized)
    b.last_fwd().comm_bytes = s.T * w * b.gathered_bytes(1);  // backward: BF16 gradient
  if (s.sequence_parallel()) b.last_bwd().tp_overlap = workload::TpOverlap::bulk;
  if (s.tp_overlap && ub) {
    b.last_fwd().tp_overlap = workload::TpOverlap::ring;
    b.last_fwd().userbuffers = b.last_bwd().userbuffers = true;
  }
  return !quantized;
}

void lora_adapter(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Module mod,
                  workload::LoraTarget target, const std::string& name, double out) {
  if (!in.training.lora || !in.training.lora->targets_has(target)) return;
  const auto& l = *in.training.lora;
  const double r = static_cast<double>(l.rank);
  const std::string n = name + ".lora";
  if (s.sequence_parallel() && s.tp_overlap)
    b.comm(n + ".sp_gather", mod, CommOp::tp_all_gather, CommOp::tp_reduce_scatter, s.T * s.h * 2);
  b.linear(n + "_a", mod, s.T, r / s.tp, s.h, false, false, 1, false, true);
  if (s.tp > 1)
    b.comm(n + "_a.gather", mod, CommOp::tp_all_gather, CommOp::tp_reduce_scatter, s.T * r * 2);
  b.linear(n + "_b", mod, s.T, out, r, false, false, 1, false, true);
  b.memory(n + ".scale", mod, s.T * out * 2 * 2);  // x alpha / rank; backward alike
  // The add into the linear's output (read both, write one); backward adds A's input
  // gradient into the linear's (T x h, read both, write one).
  b.memory(n + ".add", mod, s.T * out * 2 * 3, s.h / out);
  b.module_calls_on_last(1, 0);  // the adapter module around its two linears
}

void sp_saved_shard(LayerBuilder& b, const Shapes& s, bool ub) {
  if (s.sequence_parallel()) b.sp_local_input(s.tp, s.tp_overlap && ub);
}

void tp_scatter(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name) {
  if (s.tp <= 1) return;
  b.comm(name + ".sp_scatter", mod, CommOp::tp_reduce_scatter, CommOp::tp_all_gather,
         s.T * s.h * 2);
  if (s.tp_overlap) {
    b.last_fwd().tp_overlap = workload::TpOverlap::pipeline;
    b.last_bwd().tp_overlap =
        workload::TpOverlap::ring;  // the gather, before kernels join its group
    b.last_fwd().userbuffers = b.last_bwd().userbuffers = true;
  }
  if (s.sequence_parallel() && b.fp8()) b.sp_quantized_grad_gather(s.tp);
}

void offload(LayerBuilder& b, const workload::Framework& fw, workload::OffloadTarget t) {
  if (has(fw.offload, t)) b.last_fwd().offloaded = true;
}

void bias_dropout_add(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Module mod,
                      const std::string& name, std::size_t block_start) {
  const double elems = s.Tn * s.h;
  const bool dropout = in.training.hidden_dropout > 0;
  // DeepSeek-V4's mHC adds the block's output into its streams in its own post kernel
  // (layer_graph_dsv4.cpp mhc_post): only the dropout, if any, stays here.
  if (in.model.residual_streams() > 1) {
    if (dropout) b.memory(name + ".dropout", mod, elems * (2 + 2 + 1), (2 + 1 + 2) / 5.0, elems);
    return;
  }
  // Forward: x + residual (read 2 + 2, write 2), with dropout the mask too (1). Backward:
  // the add passes its gradient on to both inputs; with dropout the mask is applied to the
  // block's share (read 2 + 1, write 2). After the block's backward, the sum of the block
  // input's two gradients, the skip's and the norm's, which autograd's engine adds in C++.
  if (dropout)
    b.memory(name + ".bda", mod, elems * (2 + 2 + 2 + 1), (2 + 1 + 2) / 7.0, elems);
  else
    b.memory(name + ".residual_add", mod, elems * (2 + 2 + 2), 0);
  b.memory_bwd_at(block_start, name + ".residual_grad_sum", mod, elems * (2 + 2 + 2));
}

void norm(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name, bool fused_quant,
          const workload::Framework& fw, std::optional<workload::OffloadTarget> target,
          bool sp_gather) {
  b.memory(name, mod, s.Tn * s.h * 2 * 2, 1.0, s.Tn * s.h * 2);
  // Its module: a TENorm, or the IdentityOp Megatron calls where TE's LayerNormLinear fuses
  // the norm, whose weight is then the linear's (either way one call and one weight).
  b.module_calls_on_last(1, 1);
  if (target) offload(b, fw, *target);
  // Fused with the norm, MXFP8 quantizes in the norm kernel; current scaling can only take
  // the amax there and still scales and casts in kernels of their own (see `quantized`).
  // cuDNN's norm writes no NVFP4: its quantize runs on its own.
  if (b.nvfp4()) fused_quant = false;
  if (b.fp8() && (!fused_quant || b.current_scaling()))
    b.quantize(name + ".quant", mod, s.Tn * s.h, 1, fused_quant,
               sp_gather && s.sequence_parallel());
}

}  // namespace moesim::workload::detail
