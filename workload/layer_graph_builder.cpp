// workload/layer_graph_builder.cpp: LayerBuilder's members (workload/layer_graph_detail.hpp):
// the kernels of linear layers, batched GEMMs, memory-bound ops, quantization (FP8, MXFP8,
// NVFP4), core attention and communication, each with the backward kernels that undo it;
// and the helpers on top of it that every block uses: sequence parallelism's gathers and
// scatters, norms, activation offloading, hidden dropout.
#include "workload/layer_graph_detail.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

namespace moesim::workload::detail {
namespace {

// The name part of a linear's output-gradient quantization kernels ("moe.fc2.grad_quant...").
constexpr std::string_view kGradQuant = ".grad_quant";
// A kernel of a linear's output-gradient quantization (`quantized` under kGradQuant).
bool grad_quant(const KernelTemplate& k) {
  return k.name.find(kGradQuant) != std::string::npos;
}

}  // namespace

LayerBuilder::LayerBuilder(const TemplateInputs& in, LayerTemplate& out)
    : out_(out),
      stack_(in.stack),
      nvfp4_(in.training.nvfp4),
      cp_(in.parallelism.cp),
      cp_a2a_(in.parallelism.cp > 1 && in.parallelism.cp_comm == CpComm::a2a),
      fp8_attention_(in.framework.fp8_dot_product_attention),
      seq_(in.training.seq_length),
      fp8_tn_only_(in.fp8_tn_only),
      param_gather_hooks_(in.framework.distributed_optimizer && in.framework.overlap_param_gather &&
                          !in.parallelism.fsdp),
      frozen_(in.training.lora.has_value()),
      wgrad_out_bytes_(2 * main_grad_bytes(in.framework)),
      attn_bias_(in.model.attention_bias),
      mlp_bias_(in.model.mlp_bias) {
  set_quant(quant_of(in.training.precision, in.fp8_tn_only));
}

// sp_transpose: per-tensor FP8 (current or delayed scaling) on TN-only GEMMs transposes a
// gathered tensor.
LayerBuilder::Quant LayerBuilder::quant_of(Precision p, bool fp8_tn_only) {
  const bool per_tensor = p == Precision::fp8_tensorwise || p == Precision::fp8_delayed;
  return {workload::quantized(p),         p == Precision::mxfp8,
          p == Precision::nvfp4,          gemm_dtype(p),
          p == Precision::fp8_tensorwise, fp8_tn_only && per_tensor,
          p == Precision::fp8_blockwise};
}

LayerBuilder::Quant LayerBuilder::quant() const {
  return {fp8_, mx_, fp4_, dtype_, current_scaling_, sp_transpose_, blockwise_};
}

void LayerBuilder::set_quant(const Quant& q) {
  fp8_ = q.fp8;
  mx_ = q.mx;
  fp4_ = q.fp4;
  dtype_ = q.dtype;
  current_scaling_ = q.current_scaling;
  sp_transpose_ = q.sp_transpose;
  blockwise_ = q.blockwise;
}

LayerBuilder::PrecisionScope::PrecisionScope(LayerBuilder& b, std::optional<Precision> p)
    : b_(b), saved_(b.quant()) {
  if (p && b.fp8_) b.set_quant(quant_of(*p, b.fp8_tn_only_));
}

LayerBuilder::PrecisionScope::~PrecisionScope() {
  b_.set_quant(saved_);
}

void LayerBuilder::linear(const std::string& name, Module mod, double m, double n, double k,
                          bool fp8_ok, bool quantize_input, double groups, bool te, bool adapter) {
  const bool trains = !frozen_ || adapter;
  const bool fp8 = fp8_ && fp8_ok;
  const Dtype d = fp8 ? dtype_ : Dtype::bf16;
  // Input element bytes: BF16, FP8, or NVFP4's half byte with an E4M3 scale per 16 (the
  // column-wise copy wgrad reads is what the forward keeps).
  const double eb = !fp8 ? 2 : fp4_ ? kNvfp4Bytes : 1;
  // Quantized tensors: one a group, or one for all (set_fused_grouped's group quantize).
  const double qtensors = fused_grouped_ ? 1 : groups;
  if (fp8 && quantize_input) quantize(name + ".quant", mod, m * k * groups, qtensors);
  const KernelClass cls = groups > 1 ? KernelClass::grouped_gemm : KernelClass::gemm;
  const auto gemm = [&](std::vector<KernelTemplate>& to, const std::string& n_, double M, double N,
                        double K, double ob = 2) {
    // NVFP4: cuBLASLt takes alpha = amax_A amax_B / (6^2 448^2) from the device, which a
    // one-thread kernel computes before each GEMM (TE common/recipe/nvfp4.cu, called from
    // cublaslt_gemm.cu; v2.8), one per GEMM of a grouped GEMM.
    if (fp8 && fp4_)
      for (int g = 0; g < static_cast<int>(groups); ++g) to.push_back(cpp_t(n_ + ".alpha", mod, 8));
    to.push_back(gemm_t(n_, mod, cls, d, M, N, K, groups, eb, ob));
    to.back().single_launch = fused_grouped_ && groups > 1;
    return &to.back();
  };
  std::vector<KernelTemplate> f;
  KernelTemplate* fprop = gemm(f, name + ".fprop", m, n, k);
  fprop->saved_bytes = trains ? m * k * groups * eb : 0;  // wgrad reads the (quantized) input
  fprop->te_module_call = te;
  for (auto& t : f) push_fwd(std::move(t));
  module_calls_on_last(
      1, groups);  // the linear's module: a weight a GEMM (TE GroupedLinear: weight0..)
  std::vector<KernelTemplate> b;
  // The output's gradient: a frozen linear needs its row-wise copy only (dgrad), unless a
  // biased TE Linear, which keeps the column-wise one (linear.py 918-925 at d0067d0d: only
  // without a bias and a weight gradient; TE's GroupedLinear has no bias condition,
  // grouped_linear.py 1072-1075).
  const bool biased =
      groups == 1 && ((mod == Module::attn && attn_bias_) || (mod == Module::mlp && mlp_bias_));
  grad_copies_ = mx_ && !trains && !biased ? 1 : 2;
  if (fp8) {
    std::vector<KernelTemplate> q = quantized(name + std::string(kGradQuant), mod, m * n * groups,
                                              qtensors, false, true, grad_copies_);
    b.insert(b.end(), q.begin(), q.end());
  }
  gemm(b, name + ".dgrad", m, k, n)->te_module_call =
      te;  // one TE backward call computes dgrad and wgrad
  // The weight gradient accumulates into the main gradient: Megatron's gradient-accumulation
  // fusion (on by default) has TE write the wgrad GEMM's output into weight.main_grad, in its
  // dtype, with accumulate (beta = 1: the epilogue reads the running sum and writes it back;
  // TE linear.py / grouped_linear.py `out=weight.main_grad`, `accumulate=
  // accumulate_wgrad_into_param_main_grad`), and Megatron's own output layer the same through
  // wgrad_gemm_accum_fp32. So an output element costs the main gradient's bytes twice, 8 in
  // FP32 (one microbatch in a step overwrites instead: is_first_microbatch; not separated).
  // It matters where the GEMM's reduction, the tokens, is short against the weight: a
  // fine-grained expert's few hundred tokens at MBS 1 make its wgrad bound by this traffic.
  if (trains)
    gemm(b, name + ".wgrad", k, n, m, wgrad_out_bytes_)->library_launch =
        te;  // inside the same TE backward call
  push_bwd(std::move(b));
}

void LayerBuilder::drop_last_grad_quant() {
  std::erase_if(bwd_groups_.back(), grad_quant);
}

void LayerBuilder::drop_last_dgrad() {
  auto& group = bwd_groups_.back();
  const auto dgrad = std::find_if(group.begin(), group.end(), [](const KernelTemplate& k) {
    return k.name.ends_with(".dgrad");
  });
  if (dgrad == group.end()) return;
  const bool te = dgrad->te_module_call;
  group.erase(dgrad);
  for (auto& k : group)
    if (k.name.ends_with(".wgrad")) {
      k.te_module_call = te;
      k.library_launch = false;
    }
}

void LayerBuilder::bmm(const std::string& name, Module mod, double m, double n, double k,
                       double batch) {
  push_fwd(gemm_t(name + ".fwd", mod, KernelClass::gemm, Dtype::bf16, m, n, k, batch, 2));
  push_bwd({gemm_t(name + ".bwd_a", mod, KernelClass::gemm, Dtype::bf16, m, k, n, batch, 2),
            gemm_t(name + ".bwd_b", mod, KernelClass::gemm, Dtype::bf16, k, n, m, batch, 2)});
}

void LayerBuilder::memory(const std::string& name, Module mod, double bytes, double bwd_factor,
                          double saved) {
  KernelTemplate f = mem_t(name + ".fwd", mod, bytes);
  f.saved_bytes = saved;
  push_fwd(std::move(f));
  if (bwd_factor > 0) push_bwd({mem_t(name + ".bwd", mod, bytes * bwd_factor)});
}

void LayerBuilder::memory_bwd_at(std::size_t bwd_mark, const std::string& name, Module mod,
                                 double bytes) {
  KernelTemplate k = mem_t(name + ".bwd", mod, bytes);
  k.cpp_launch = true;
  bwd_groups_.insert(bwd_groups_.begin() + static_cast<std::ptrdiff_t>(bwd_mark), {std::move(k)});
}

void LayerBuilder::memory_kernels(const std::string& name, Module mod,
                                  const std::vector<double>& fwd, const std::vector<double>& bwd,
                                  double saved) {
  for (std::size_t i = 0; i < fwd.size(); ++i)
    push_fwd(mem_t(name + "." + std::to_string(i) + ".fwd", mod, fwd[i]));
  if (!fwd.empty()) out_.fwd.back().saved_bytes = saved;
  std::vector<KernelTemplate> group;
  for (std::size_t i = 0; i < bwd.size(); ++i)
    group.push_back(mem_t(name + "." + std::to_string(i) + ".bwd", mod, bwd[i]));
  if (!group.empty()) push_bwd(std::move(group));
}

std::vector<LayerBuilder::MemKernel> LayerBuilder::chunk_call(
    const std::vector<hw_models::ChunkKernel>& kernels, KernelClass rate, double tokens,
    double seqs) {
  std::vector<MemKernel> out;
  for (const auto& k : kernels)
    out.push_back({k.name, tokens * k.bytes, k.ctas_per_seq * seqs, tokens * k.flops, rate});
  return out;
}

void LayerBuilder::memory_kernels(const std::string& name, Module mod,
                                  const std::vector<MemKernel>& fwd,
                                  const std::vector<MemKernel>& bwd, double saved) {
  const auto make = [&](const MemKernel& k, const char* pass) {
    KernelTemplate t = mem_t(name + "." + k.name + pass, mod, k.bytes);
    t.work.ctas = k.ctas;
    if (k.flops > 0) t.work.cls = k.rate, t.work.flops = k.flops;
    return t;
  };
  for (const MemKernel& k : fwd) push_fwd(make(k, ".fwd"));
  if (!fwd.empty()) out_.fwd.back().saved_bytes = saved;
  std::vector<KernelTemplate> group;
  for (const MemKernel& k : bwd) group.push_back(make(k, ".bwd"));
  if (!group.empty()) push_bwd(std::move(group));
}

// A frozen linear (LoRA's base) computes no weight gradient, so TE quantizes its input
// row-wise only (TransformerEngine d0067d0d module/linear.py 428-435, and 386-389 where the
// input is gathered: columnwise=backward_needs_input; grouped_linear.py 460-463): one MXFP8
// copy and its scales. NVFP4 is priced with both copies (its row-wise-only cast is not
// modeled). Every quantized input under LoRA feeds a frozen linear (the adapters are BF16).
void LayerBuilder::quantize(const std::string& name, Module mod, double elems, double tensors,
                            bool norm_amax, bool tp_reduce) {
  std::vector<KernelTemplate> q =
      quantized(name, mod, elems, tensors, norm_amax, false, mx_ && frozen_ ? 1 : 2);
  if (tp_reduce) insert_tp_amax(q, name, mod);
  for (auto& k : q) push_fwd(std::move(k));
}

double LayerBuilder::gathered_bytes(double copies) const {
  if (fp4_) return copies * kNvfp4Bytes;
  if (mx_) return copies * (1 + 1.0 / 32);
  if (blockwise_)
    return copies * (1 + 4.0 / 128);  // FP32 scales per 128 (_start_all_gather_fp8_blockwise)
  return 1;
}

void LayerBuilder::sp_quantized_grad_gather(double tp) {
  if (bwd_groups_.size() < 2) return;
  auto& gather = bwd_groups_.back();
  auto& lin = bwd_groups_[bwd_groups_.size() - 2];  // [gradient quantization..., dgrad, wgrad]
  // The scale swizzles stay with the GEMMs: TE gathers unswizzled scales and swizzles the
  // gathered tensor's before its GEMM (the userbuffers path asserts unswizzled scales).
  const auto is_quant = [](const KernelTemplate& k) {
    return grad_quant(k) && k.name.find(".swizzle") == std::string::npos;
  };
  std::vector<KernelTemplate> q;
  for (const auto& k : lin)
    if (is_quant(k)) q.push_back(k);
  if (q.empty() || gather.size() != 1 || gather.front().comm != CommOp::tp_all_gather) return;
  lin.erase(std::remove_if(lin.begin(), lin.end(), is_quant), lin.end());
  for (auto& k : q) k.work.bytes /= tp;
  const std::string& first = q.front().name;
  const std::string name = first.substr(0, first.find(kGradQuant) + kGradQuant.size());
  insert_tp_amax(q, name, q.front().module);
  const double elems = gather.front().comm_bytes / 2;  // the BF16 gradient's
  gather.front().comm_bytes = elems * gathered_bytes(grad_copies_);
  gather.insert(gather.begin(), q.begin(), q.end());
  if (sp_transpose_)
    gather.push_back(sp_transpose_t(name + ".sp_transpose", gather.front().module, elems));
}

void LayerBuilder::forward_gemm(const std::string& name, Module mod, double m, double n, double k,
                                double batch) {
  push_fwd(gemm_t(name + ".fwd", mod, KernelClass::gemm, Dtype::bf16, m, n, k, batch, 2));
  push_bwd({});
}

void LayerBuilder::attention(const std::string& name, Module mod, double fwd_flops, double bytes,
                             double kv_bytes, std::int64_t window, bool backward, KernelClass cls) {
  KernelTemplate f;
  f.name = name + ".fwd";
  f.module = mod;
  // The key sequence of one call: the whole sequence, or one ring step's chunk under CP (the
  // whole sequence again under CP's all-to-alls); a sliding window's keys.
  const std::int64_t seq = cp_a2a_ ? seq_ : seq_ / cp_;
  const std::int64_t keys = window > 0 ? std::min(window, seq) : seq;
  f.work = {cls, fp8_attention_ ? Dtype::fp8 : Dtype::bf16, fwd_flops, bytes, 0, 0, keys, 1, 2};
  f.saved_bytes = bytes;  // q, k, v and the output (plus softmax statistics, negligible)
  f.cp_ring_bytes = cp_ > 1 && !cp_a2a_ ? kv_bytes : 0;
  push_fwd(f);
  if (!backward) {
    out_.fwd.back().saved_bytes = 0;
    push_bwd({});
    return;
  }
  KernelTemplate b = f;
  b.name = name + ".bwd";
  b.saved_bytes = 0;
  b.work.cls = KernelClass::attention_bwd;
  b.work.flops = 2 * fwd_flops;  // dQ, dK, dV: Megatron counts backward as 2x forward
  b.work.bytes = 2 * bytes;
  // cuDNN's FP8 and MXFP8 backward under a sliding window does not skip the blocks outside
  // it: it computes the whole causal triangle. NVIDIA/cudnn-frontend's GPT-OSS rows (window
  // 128, 128 heads of 64, batch 2; benchmark/sdpa_benchmark_training/results/gpt_oss/gb200/
  // gpt_oss_20260813_110803.csv @20dc1089, cuDNN 9.27): FP8 backward 1.771 / 6.287 / 23.62 /
  // 91.73 ms at S = 4k / 8k / 16k / 32k (x3.55, x3.76, x3.88 a doubling: quadratic), BF16
  // 0.458 / 0.899 / 1.818 / 3.626 ms (linear); MXFP8 2.070 ... 107.5 ms; the same on GB300
  // (gpt_oss/gb300/gpt_oss_20260724_040706.csv @e99b0d0b, cuDNN 9.26) and at window 1024
  // (gb200_919_only_cudnn/gpt_oss_20260226_175022.csv @afa9f7c0, cuDNN 9.19). The forward
  // skips them (FP8 forward as fast as BF16's in every row). So the FP8 backward's work is
  // the causal one: keys per query s / 2 instead of the window's w - w (w - 1) / (2 s), as
  // attention_block counts them (layer_graph_attention.cpp), over the whole key sequence.
  // Measured on Blackwell only; applied to every GPU with an FP8 attention figure (no Hopper
  // row: cuDNN 9.19 refuses FP8 attention at head size 64 there, h200_919_only_cudnn).
  if (fp8_attention_ && window > 0 && window < seq_) {
    const double w = static_cast<double>(window), s = static_cast<double>(seq_);
    b.work.flops *= (s / 2) / (w - w * (w - 1) / (2 * s));
    b.work.k = seq;
  }
  b.cp_ring_bytes = 2 * f.cp_ring_bytes;
  push_bwd({b});
}

void LayerBuilder::cp_all_to_all_last(double in_bytes, double out_bytes) {
  if (!cp_a2a_) return;
  out_.fwd.back().cp_a2a_in_bytes = in_bytes;
  out_.fwd.back().cp_a2a_out_bytes = out_bytes;
  for (auto& k : bwd_groups_.back()) {
    k.cp_a2a_in_bytes = out_bytes;  // the output's gradient
    k.cp_a2a_out_bytes = in_bytes;  // the inputs' gradients
  }
}

void LayerBuilder::comm(const std::string& name, Module mod, CommOp fwd_op, CommOp bwd_op,
                        double bytes, bool sync_after, bool backward) {
  KernelTemplate f;
  f.name = name + ".fwd";
  f.module = mod;
  f.comm = fwd_op;
  f.comm_bytes = bytes;
  f.host_sync_after = sync_after;
  push_fwd(f);
  if (!backward) {  // forward-only (a counts exchange whose result backward reuses)
    push_bwd({});
    return;
  }
  KernelTemplate b = f;
  b.name = name + ".bwd";
  b.comm = bwd_op;
  b.host_sync_after = false;  // backward reuses the forward's counts
  push_bwd({b});
}

void LayerBuilder::small_kernels(const std::string& name, Module mod, int count, double bytes,
                                 int bwd_count) {
  if (bwd_count < 0) bwd_count = count;
  for (int i = 0; i < count; ++i)
    memory(name + "." + std::to_string(i), mod, bytes, i < bwd_count ? 1.0 : 0.0);
  for (int i = count; i < bwd_count; ++i)
    push_bwd({mem_t(name + "." + std::to_string(i) + ".bwd", mod, bytes)});
}

void LayerBuilder::recompute_since(std::size_t mark, Checkpoint wrapper, bool keep_syncs) {
  const std::size_t first = recomputed_.size();
  for (std::size_t i = mark; i < out_.fwd.size(); ++i) {
    KernelTemplate t = out_.fwd[i];
    t.recompute = true;
    t.host_sync_after = keep_syncs && t.host_sync_after;
    t.name += ".recompute";
    recomputed_.push_back(std::move(t));
  }
  if (mark >= out_.fwd.size()) return;
  // The checkpoint wrapper's own host work (header): before the segment's first kernel
  // in the forward, and before its first re-run kernel in the backward.
  const CheckpointOps ops = checkpoint_ops(wrapper);
  out_.fwd[mark].host_ops += ops.fwd;
  recomputed_[first].host_ops += ops.bwd;
}

LayerBuilder::CheckpointOps LayerBuilder::checkpoint_ops(Checkpoint wrapper) const {
  if (wrapper == Checkpoint::function) return kCheckpointFunctionOps;
  CheckpointOps ops = kCheckpointWithoutOutputOps;
  // The flag `fp8 is not None`: always for the default, under FP8/FP4 for mla_up_proj's.
  if (wrapper == Checkpoint::without_output || fp8_) {
    ops.fwd += kTeRecomputeContextOps.fwd;
    ops.bwd += kTeRecomputeContextOps.bwd + (fp8_ ? 0 : kTeDefaultRecipeOps);
  }
  return ops;
}

KernelTemplate LayerBuilder::gemm_t(const std::string& name, Module mod, KernelClass cls, Dtype d,
                                    double M, double N, double K, double groups, double eb,
                                    double ob) {
  KernelTemplate t;
  t.name = name;
  t.module = mod;
  t.work = {cls,
            d,
            2 * M * N * K * groups,
            (M * K * eb + K * N * eb + M * N * ob) * groups,
            static_cast<std::int64_t>(M),
            static_cast<std::int64_t>(N),
            static_cast<std::int64_t>(K),
            static_cast<std::int64_t>(groups),
            eb};
  return t;
}

void LayerBuilder::sp_local_input(double tp, bool userbuffers) {
  if (frozen_) return;  // a frozen linear keeps no input: no weight gradient reads it
  KernelTemplate& f = out_.fwd.back();
  const double gathered_bytes = f.saved_bytes;
  f.saved_bytes /= tp;
  auto& group = bwd_groups_.back();  // [grad quantization..., dgrad, wgrad]
  KernelTemplate g;
  const std::string base = f.name.substr(0, f.name.rfind('.'));
  g.name = base + ".sp_regather";
  g.module = f.module;
  g.comm = CommOp::tp_all_gather;
  g.comm_bytes = gathered_bytes;
  g.tp_overlap = workload::TpOverlap::bulk;  // beside the GEMM before it: the dgrad
  g.userbuffers = userbuffers;
  group.insert(group.end() - 1, g);
  if (sp_transpose_ && f.work.dtype != Dtype::bf16)
    group.insert(group.end() - 1, sp_transpose_t(base + ".sp_transpose", f.module, gathered_bytes));
}

void LayerBuilder::side_stream_since(SideMark m) {
  const auto side = [](KernelTemplate& k) {
    k.side_stream = true;
    k.tp_overlap = TpOverlap::none;
    k.userbuffers = false;
  };
  for (std::size_t i = m.fwd; i < out_.fwd.size(); ++i) side(out_.fwd[i]);
  for (std::size_t g = m.bwd; g < bwd_groups_.size(); ++g)
    for (auto& k : bwd_groups_[g]) side(k);
  if (m.fwd > 0 && m.fwd < out_.fwd.size() && out_.fwd[m.fwd - 1].comm != CommOp::none)
    out_.fwd[m.fwd].side_after_comm = true;
}

namespace {

// Moves each side-stream run the reversal puts before a communication kernel (or before the
// dispatcher's small kernels ahead of one: HybridEP's flags) after it, forking there (finish()).
void side_runs_after_comm(std::vector<KernelTemplate>& ks) {
  const auto own = [](const KernelTemplate& k) {  // the dispatcher's own small kernels
    return k.comm == CommOp::none && k.work.cls != KernelClass::gather &&
           (k.module == Module::moe_dispatch || k.module == Module::moe_combine);
  };
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (!ks[i].side_stream || (i > 0 && ks[i - 1].side_stream)) continue;
    std::size_t end = i, comm = i;
    while (end < ks.size() && ks[end].side_stream) comm = ++end;
    while (comm < ks.size() && own(ks[comm])) ++comm;
    if (comm == ks.size() || ks[comm].comm == CommOp::none) {
      i = end;
      continue;
    }
    const auto at = [&](std::size_t x) { return ks.begin() + static_cast<std::ptrdiff_t>(x); };
    std::rotate(at(i), at(end), at(comm + 1));
    ks[i + (comm + 1 - end)].side_after_comm = true;
    i = comm;
  }
}

// Marks the main-stream kernel that waits for the side stream: the first after the last
// side-stream run but the permutes right after it (Megatron's all-to-all dispatcher unpermutes
// before get_output; in backward the permute's gradient does not wait for the shared expert's).
// None where the run ends the list: the next layer's first kernel joins (rank_program.cpp).
void join_side_stream(std::vector<KernelTemplate>& ks) {
  std::size_t j = ks.size();
  for (std::size_t i = 0; i < ks.size(); ++i)
    if (ks[i].side_stream) j = i + 1;
  while (j < ks.size() && ks[j].work.cls == KernelClass::gather) ++j;
  if (j < ks.size()) ks[j].join_side = true;
}

}  // namespace

void LayerBuilder::finish() {
  std::vector<KernelTemplate> reversed;
  for (auto it = bwd_groups_.rbegin(); it != bwd_groups_.rend(); ++it)
    reversed.insert(reversed.end(), it->begin(), it->end());
  side_runs_after_comm(reversed);
  out_.bwd = recomputed_;
  out_.bwd.insert(out_.bwd.end(), reversed.begin(), reversed.end());
  join_side_stream(out_.fwd);
  join_side_stream(out_.bwd);
}

KernelTemplate LayerBuilder::mem_t(const std::string& name, Module mod, double bytes) const {
  KernelTemplate t;
  t.name = name;
  t.module = mod;
  t.work = {KernelClass::memory, Dtype::bf16, 0, bytes, 0, 0, 0, 1, 2};
  return t;
}

KernelTemplate LayerBuilder::quantize_t(const std::string& name, Module mod, double elems,
                                        double copies) const {
  KernelTemplate q = lib_t(
      name, mod, elems * (2 + (fp4_ ? copies * kNvfp4Bytes : (mx_ ? copies : 1) * (1 + 1.0 / 32))));
  q.work.cls = KernelClass::quantize;
  q.pdl = stack_.pdl_quant;
  return q;
}

KernelTemplate LayerBuilder::sp_transpose_t(const std::string& name, Module mod,
                                            double elems) const {
  return lib_t(name, mod, 2 * elems);
}

KernelTemplate LayerBuilder::lib_t(const std::string& name, Module mod, double bytes) const {
  KernelTemplate t = mem_t(name, mod, bytes);
  t.library_launch = true;
  return t;
}

KernelTemplate LayerBuilder::cpp_t(const std::string& name, Module mod, double bytes) const {
  KernelTemplate t = mem_t(name, mod, bytes);
  t.cpp_launch = true;
  return t;
}

void LayerBuilder::insert_tp_amax(std::vector<KernelTemplate>& q, const std::string& name,
                                  Module mod) const {
  if (!current_scaling_ && !fp4_) return;
  const auto first = std::find_if(q.begin(), q.end(), [](const KernelTemplate& k) {
    return k.work.cls == KernelClass::quantize || std::string_view(k.name).ends_with(".scale");
  });
  KernelTemplate t;
  t.name = name + ".tp_amax";
  t.module = mod;
  t.comm = CommOp::tp_amax_all_reduce;
  t.comm_bytes = fp4_ ? 8 : 4;
  t.library_launch = true;
  q.insert(first, std::move(t));
}

void LayerBuilder::nvfp4_quantized(std::vector<KernelTemplate>& out, const std::string& name,
                                   Module mod, double elems, int tensors, bool gradient) const {
  const bool sr = gradient && nvfp4_.stochastic_rounding;
  const auto cast = [&](const std::string& n, double e, double copies, double sr_slowdown) {
    out.push_back(quantize_t(n, mod, e, copies));
    out.back().time_factor = sr ? sr_slowdown : 1.0;
    out.back().host_allocs = 6;
    out.back().host_ops = 1;
  };
  out.push_back(cpp_t(name + ".amax_zero", mod, 4));
  out.push_back(cpp_t(name + (nvfp4_.rht ? ".hadamard_amax" : ".amax"), mod, elems * 2));
  if (tensors > 1 && nvfp4_.rht) {
    cast(name, elems, 2, 6.4 / 4.5);
    return;
  }
  const bool split = tensors == 1 && nvfp4_.rht && !stack_.nvfp4_rht_fusion;
  for (int t = 0; t < tensors; ++t) {
    cast(name, elems / tensors, split ? 1 : 2, split ? 7.2 / 7.0 : 6.4 / 4.5);
    // The column-wise copy's own cast; TE #2412 gives no rate for it alone, so it takes the
    // both-copies slowdown.
    if (split) cast(name + ".hadamard_cast", elems, 1, 6.4 / 4.5);
  }
}

std::vector<KernelTemplate> LayerBuilder::quantized(const std::string& name, Module mod,
                                                    double elems, double tensors, bool norm_amax,
                                                    bool gradient, double copies) const {
  std::vector<KernelTemplate> out;
  const int n = static_cast<int>(tensors);
  // Block scales per copy and tensor: E8M0 per 32 (MXFP8), E4M3 per 16 (NVFP4).
  const double scale_bytes = (fp4_ ? elems / 16 : elems / 32) * copies / tensors;
  if (fp4_) {
    nvfp4_quantized(out, name, mod, elems, n, gradient);
    swizzles(out, name, mod, scale_bytes, n);
    return out;
  }
  if (mx_ && !stack_.mxfp8_alloc_fusion) {
    for (int t = 0; t < n; ++t)
      for (int z = 0; z < static_cast<int>(copies); ++z)
        out.push_back(cpp_t(name + ".scale_zeros", mod, scale_bytes / copies));
    out.front().host_allocs = 2 * static_cast<int>(copies) * n;
  }
  for (int t = 0; t < n; ++t) {
    if (current_scaling_) {
      // Per-tensor current scaling (Megatron --fp8-recipe tensorwise: TransformerEngine's
      // Float8CurrentScaling) needs the tensor's amax before its scale (delayed scaling
      // takes it from history). TE v2.11 Float8CurrentScalingQuantizer::quantize
      // (pytorch/csrc/quantizer.cpp 497-536; common/recipe/current_scaling.cu 75-107, 258):
      // a one-thread kernel zeroes the amax, a reduction pass over the BF16 input, a
      // one-thread kernel turns the amax into the scale, then the cast (cast_transpose
      // where the GEMM needs the column-wise copy). With norm_amax the norm kernel has
      // computed the amax already (TE's FUSED_NORM_AMAX_FP8 path, normalization.cpp
      // 350-422), so only the zero-fill before it, the scale and the cast remain. Split
      // tensors (GroupedLinear's split_quantize, cast.cpp 1024-1031) take this path once
      // each: only delayed scaling has a multi-tensor quantize before TE PR 3114.
      out.push_back(cpp_t(name + ".amax_zero", mod, 4));
      if (!norm_amax) out.push_back(cpp_t(name + ".amax", mod, elems / tensors * 2));
      out.push_back(cpp_t(name + ".scale", mod, 8));
    }
    // Each split of a grouped GEMM's split_quantize is priced as a quantize call
    // (library_launch_us), not as a bare launch: TE's C++ loop runs the whole quantize
    // path per split (create_tensor's allocations and its Python tensor object, the
    // quantizer's checks, then the kernel; cast.cpp split_quantize).
    out.push_back(quantize_t(name, mod, elems / tensors, copies));
    // create_tensor (quantizer.cpp 325-389): data, its transpose (Hopper's FP8 GEMMs are
    // TN only) and scale_inv, wrapped in a Python Float8TensorStorage.
    if (current_scaling_) {
      out.back().host_allocs += 3;
      out.back().host_ops += 1;
    }
  }
  if (mx_) swizzles(out, name, mod, scale_bytes, n);
  return out;
}

void LayerBuilder::swizzles(std::vector<KernelTemplate>& out, const std::string& name, Module mod,
                            double scale_bytes, int n) const {
  if (stack_.swizzle_fusion) {
    out.push_back(cpp_t(name + ".swizzle", mod, 2 * scale_bytes * n));
    out.back().host_allocs = 1;
    return;
  }
  for (int t = 0; t < n; ++t) {
    out.push_back(cpp_t(name + ".swizzle_pad", mod, scale_bytes));
    out.push_back(cpp_t(name + ".swizzle", mod, 2 * scale_bytes));
    out.back().host_allocs = 1;
  }
}
}  // namespace moesim::workload::detail
