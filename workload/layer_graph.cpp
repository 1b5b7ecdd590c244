#include "workload/layer_graph.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

#include "workload/eplb.hpp"

namespace moesim::workload {
namespace {

using hw_models::ComputeWork;
using hw_models::Dtype;
using hw_models::KernelClass;

// The name part of a linear's output-gradient quantization kernels ("moe.fc2.grad_quant...").
constexpr std::string_view kGradQuant = ".grad_quant";

// Accumulates one layer's forward kernels and, per forward op, the backward kernels that
// undo it; backward runs the ops' groups in reverse order.
class LayerBuilder {
 public:
  LayerBuilder(const TemplateInputs& in, LayerTemplate& out)
      : out_(out),
        stack_(in.stack),
        fp8_(workload::quantized(in.training.precision)),
        mx_(in.training.precision == Precision::mxfp8),
        fp4_(in.training.precision == Precision::nvfp4),
        nvfp4_(in.training.nvfp4),
        dtype_(gemm_dtype(in.training.precision)),
        current_scaling_(in.training.precision == Precision::fp8_tensorwise),
        cp_(in.parallelism.cp),
        fp8_attention_(in.framework.fp8_dot_product_attention),
        seq_(in.training.seq_length),
        sp_transpose_(in.fp8_tn_only && (in.training.precision == Precision::fp8_tensorwise ||
                                         in.training.precision == Precision::fp8_delayed)),
        blockwise_(in.training.precision == Precision::fp8_blockwise),
        param_gather_hooks_(in.framework.distributed_optimizer &&
                            in.framework.overlap_param_gather && !in.parallelism.fsdp) {}

  // Megatron-Core's DDP with the distributed optimizer and --overlap-param-gather registers a
  // forward pre-hook on every submodule (distributed_data_parallel.py enable_forward_pre_hook,
  // 421-431 at 6a6cd47, 489-494 at d98e8a64, enabled from the second iteration on). Each
  // module call then leaves PyTorch's hook-free fast path in Module._call_impl (the full path
  // costs about 2 us more for an empty module: pytorch/pytorch#50431, measured before the
  // fast path of PR #52576) and runs the hook, which walks the module's own parameters: a
  // dict lookup and a finish_param_sync call each (_make_forward_pre_hook, 450-484 at
  // 6a6cd47), returning at once once the gather is done. Priced as host ops (host.op_us, a
  // Python-level call, x the host load): kHookOpsPerCall a module call, one a parameter.
  // Under graph capture the hook returns (is_graph_capturing) and a replay calls no module,
  // so captured ops carry no hook work (their host cost is the graph's). Backward calls no
  // forward hook; a recomputed forward calls its modules again.
  static constexpr int kHookOpsPerCall = 2;
  // `calls` module calls owning `params` parameters, made just before the last forward op
  // (or the one at `index`).
  void module_calls_on_last(int calls, double params) {
    module_calls_at(out_.fwd.size() - 1, calls, params);
  }
  void module_calls_at(std::size_t index, int calls, double params) {
    if (!param_gather_hooks_) return;
    out_.fwd.at(index).host_ops += kHookOpsPerCall * calls + static_cast<int>(params);
  }

  // A linear layer y = x W: fprop, then dgrad and wgrad in backward, FP8 when the recipe
  // quantizes linear layers. `quantize_input`: the input needs its own quantize kernel.
  // `te`: a Transformer Engine module (all linear layers except the router and the output
  // layer, which Megatron runs as plain PyTorch / its own parallel linear).
  void linear(const std::string& name, Module mod, double m, double n, double k, bool fp8_ok,
              bool quantize_input, double groups = 1, bool te = true) {
    const bool fp8 = fp8_ && fp8_ok;
    const Dtype d = fp8 ? dtype_ : Dtype::bf16;
    // Input element bytes: BF16, FP8, or NVFP4's half byte with an E4M3 scale per 16 (the
    // column-wise copy wgrad reads is what the forward keeps).
    const double eb = !fp8 ? 2 : fp4_ ? kNvfp4Bytes : 1;
    if (fp8 && quantize_input) quantize(name + ".quant", mod, m * k * groups, groups);
    const KernelClass cls = groups > 1 ? KernelClass::grouped_gemm : KernelClass::gemm;
    const auto gemm = [&](std::vector<KernelTemplate>& to, const std::string& n_, double M,
                          double N, double K) {
      // NVFP4: cuBLASLt takes alpha = amax_A amax_B / (6^2 448^2) from the device, which a
      // one-thread kernel computes before each GEMM (TE common/recipe/nvfp4.cu, called from
      // cublaslt_gemm.cu; v2.8), one per GEMM of a grouped GEMM.
      if (fp8 && fp4_)
        for (int g = 0; g < static_cast<int>(groups); ++g)
          to.push_back(cpp_t(n_ + ".alpha", mod, 8));
      to.push_back(gemm_t(n_, mod, cls, d, M, N, K, groups, eb));
      return &to.back();
    };
    std::vector<KernelTemplate> f;
    KernelTemplate* fprop = gemm(f, name + ".fprop", m, n, k);
    fprop->saved_bytes = m * k * groups * eb;  // wgrad reads the (quantized) input
    fprop->te_module_call = te;
    for (auto& t : f) push_fwd(std::move(t));
    module_calls_on_last(
        1, groups);  // the linear's module: a weight a GEMM (TE GroupedLinear: weight0..)
    std::vector<KernelTemplate> b;
    if (fp8) {
      std::vector<KernelTemplate> q =
          quantized(name + std::string(kGradQuant), mod, m * n * groups, groups, false, true);
      b.insert(b.end(), q.begin(), q.end());
    }
    gemm(b, name + ".dgrad", m, k, n)->te_module_call =
        te;  // one TE backward call computes dgrad and wgrad
    gemm(b, name + ".wgrad", k, n, m)->library_launch = te;  // inside the same TE backward call
    push_bwd(std::move(b));
  }

  // A batched BF16 GEMM of `batch` independent M x N x K products (cuBLAS strided batched,
  // priced as a GEMM over batch x its tiles): forward, and in backward the gradients of
  // both inputs, each an activation gradient the previous op waits for (no weight).
  void bmm(const std::string& name, Module mod, double m, double n, double k, double batch) {
    push_fwd(gemm_t(name + ".fwd", mod, KernelClass::gemm, Dtype::bf16, m, n, k, batch, 2));
    push_bwd({gemm_t(name + ".bwd_a", mod, KernelClass::gemm, Dtype::bf16, m, k, n, batch, 2),
              gemm_t(name + ".bwd_b", mod, KernelClass::gemm, Dtype::bf16, k, n, m, batch, 2)});
  }

  // A memory-bound elementwise kernel reading and writing `bytes` in total; backward costs
  // the same traffic again (`bwd_factor` times).
  void memory(const std::string& name, Module mod, double bytes, double bwd_factor = 1.0,
              double saved = 0) {
    KernelTemplate f = mem_t(name + ".fwd", mod, bytes);
    f.saved_bytes = saved;
    push_fwd(std::move(f));
    if (bwd_factor > 0) push_bwd({mem_t(name + ".bwd", mod, bytes * bwd_factor)});
  }

  // Quantizes `tensors` tensors of `elems` elements in all into FP8 (see header for the
  // MXFP8 allocation and swizzle kernels that go with it).
  // `tp_reduce`: the input is a sequence-parallel shard gathered quantized after this, so its
  // amax is reduced over TP first (current scaling and NVFP4; see `sp_quantized_grad_gather`).
  void quantize(const std::string& name, Module mod, double elems, double tensors = 1,
                bool norm_amax = false, bool tp_reduce = false) {
    std::vector<KernelTemplate> q = quantized(name, mod, elems, tensors, norm_amax);
    if (tp_reduce) insert_tp_amax(q, name, mod);
    for (auto& k : q) push_fwd(std::move(k));
  }

  // Bytes an element of a quantized tensor takes in a sequence-parallel all-gather, `copies`
  // the copies the quantizer asks for (TE distributed.py gather_along_first_dim with a
  // quantizer @ d0067d0d): per-tensor FP8 (delayed and current scaling) gathers the
  // row-wise data only, its transpose made after the gather where the GEMM needs it
  // (_all_gather_fp8, 989-1080); MXFP8 and NVFP4 gather every requested copy with its
  // block scales (_all_gather_mxfp8 1527-1665, _all_gather_nvfp4 1332-1420).
  double gathered_bytes(double copies) const {
    if (fp4_) return copies * kNvfp4Bytes;
    if (mx_) return copies * (1 + 1.0 / 32);
    if (blockwise_)
      return copies * (1 + 4.0 / 128);  // FP32 scales per 128 (_start_all_gather_fp8_blockwise)
    return 1;
  }

  // Under sequence parallelism a row-parallel FP8 linear's output gradient (the backward of
  // its forward reduce-scatter is an all-gather) is quantized on the rank's own shard and
  // gathered quantized, row- and column-wise (TE module/base.py grad_output_preprocess
  // 1688-1750: gather_along_first_dim with the grad-output quantizer), where moesim's
  // linear() quantizes the gathered gradient after a BF16 gather. This moves the linear's
  // gradient quantization, on 1/tp of the rows, before the gather (the group just pushed)
  // and prices the gather at the quantized bytes.
  void sp_quantized_grad_gather(double tp) {
    if (bwd_groups_.size() < 2) return;
    auto& gather = bwd_groups_.back();
    auto& lin = bwd_groups_[bwd_groups_.size() - 2];  // [gradient quantization..., dgrad, wgrad]
    // The scale swizzles stay with the GEMMs: TE gathers unswizzled scales and swizzles the
    // gathered tensor's before its GEMM (the userbuffers path asserts unswizzled scales).
    const auto is_quant = [](const KernelTemplate& k) {
      return k.name.find(kGradQuant) != std::string::npos &&
             k.name.find(".swizzle") == std::string::npos;
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
    gather.front().comm_bytes = elems * gathered_bytes(2);
    gather.insert(gather.begin(), q.begin(), q.end());
    if (sp_transpose_)
      gather.push_back(sp_transpose_t(name + ".sp_transpose", gather.front().module, elems));
  }
  bool current_scaling() const { return current_scaling_; }

  // `kv_bytes`: K and V of the rank's tokens, which context parallelism's ring passes on
  // every step (forward); backward passes them and their gradients.
  // `window`: the keys a query attends to under sliding-window attention (0: all).
  void attention(const std::string& name, Module mod, double fwd_flops, double bytes,
                 double kv_bytes, std::int64_t window = 0) {
    KernelTemplate f;
    f.name = name + ".fwd";
    f.module = mod;
    // The key sequence of one call: the whole sequence, or one ring step's chunk under CP;
    // a sliding window's keys.
    const std::int64_t keys = window > 0 ? std::min(window, seq_ / cp_) : seq_ / cp_;
    f.work = {KernelClass::attention_fwd,
              fp8_attention_ ? Dtype::fp8 : Dtype::bf16,
              fwd_flops,
              bytes,
              0,
              0,
              keys,
              1,
              2};
    f.saved_bytes = bytes;  // q, k, v and the output (plus softmax statistics, negligible)
    f.cp_ring_bytes = cp_ > 1 ? kv_bytes : 0;
    push_fwd(f);
    KernelTemplate b = f;
    b.name = name + ".bwd";
    b.saved_bytes = 0;
    b.work.cls = KernelClass::attention_bwd;
    b.work.flops = 2 * fwd_flops;  // dQ, dK, dV: Megatron counts backward as 2x forward
    b.work.bytes = 2 * bytes;
    b.cp_ring_bytes = 2 * f.cp_ring_bytes;
    push_bwd({b});
  }

  // Communication that runs in forward and reverses in backward (dispatch <-> combine).
  void comm(const std::string& name, Module mod, CommOp fwd_op, CommOp bwd_op, double bytes,
            bool sync_after = false, bool backward = true) {
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

  // Several small kernels (router, preprocess) of `bytes` each, forward and backward.
  // Several small kernels (router, preprocess, metadata) of `bytes` each: `count` in
  // forward, `bwd_count` in backward (default the same). The backward kernels of
  // PyTorch's built-in autograd nodes are priced like Python ops: the engine's per-node
  // CPU time (ViewBackward0, about 14 us on x86 under the profiler, an upper bound) is
  // that of a launching op (docs/research/host-microbenchmarks.md 3).
  void small_kernels(const std::string& name, Module mod, int count, double bytes,
                     int bwd_count = -1) {
    if (bwd_count < 0) bwd_count = count;
    for (int i = 0; i < count; ++i)
      memory(name + "." + std::to_string(i), mod, bytes, i < bwd_count ? 1.0 : 0.0);
    for (int i = count; i < bwd_count; ++i)
      push_bwd({mem_t(name + "." + std::to_string(i) + ".bwd", mod, bytes)});
  }

  // The kernels since `mark` are re-run at the start of backward (selective recompute).
  std::size_t mark() const { return out_.fwd.size(); }
  // `keep_syncs`: the recomputed segment waits on the device again where its forward did
  // (a recomputed dropless MoE layer re-reads its token counts).
  void recompute_since(std::size_t mark, bool keep_syncs = false) {
    for (std::size_t i = mark; i < out_.fwd.size(); ++i) {
      KernelTemplate t = out_.fwd[i];
      t.recompute = true;
      t.host_sync_after = keep_syncs && t.host_sync_after;
      t.name += ".recompute";
      recomputed_.push_back(std::move(t));
    }
  }
  void mark_sync_on_last(int delay = 0) {
    out_.fwd.back().host_sync_after = true;
    out_.fwd.back().host_sync_delay = delay;
  }
  // The last forward op (and its backward) runs `f` times slower.
  void slow_last(double f) {
    out_.fwd.back().time_factor = f;
    for (auto& k : bwd_groups_.back()) k.time_factor = f;
  }
  void keep_last(double bytes) { out_.fwd.back().saved_bytes += bytes; }
  // What the forward kernels since `mark` save, `f` times over.
  void scale_saved_since(std::size_t mark, double f) {
    for (std::size_t i = mark; i < out_.fwd.size(); ++i) out_.fwd[i].saved_bytes *= f;
  }
  void transient(double bytes) { out_.transient_bytes = std::max(out_.transient_bytes, bytes); }
  // The last forward op (and its backward) gathers rows through an index map.
  void gather_last() {
    out_.fwd.back().work.cls = KernelClass::gather;
    for (auto& k : bwd_groups_.back()) k.work.cls = KernelClass::gather;
  }
  KernelTemplate& last_fwd() { return out_.fwd.back(); }

  // One GEMM kernel of `groups` M x N x K products with inputs of `eb` bytes an element.
  static KernelTemplate gemm_t(const std::string& name, Module mod, KernelClass cls, Dtype d,
                               double M, double N, double K, double groups, double eb) {
    KernelTemplate t;
    t.name = name;
    t.module = mod;
    t.work = {cls,
              d,
              2 * M * N * K * groups,
              (M * K * eb + K * N * eb + M * N * 2) * groups,
              static_cast<std::int64_t>(M),
              static_cast<std::int64_t>(N),
              static_cast<std::int64_t>(K),
              static_cast<std::int64_t>(groups),
              eb};
    return t;
  }
  KernelTemplate& last_bwd() { return bwd_groups_.back().back(); }

  // Under sequence parallelism the linear just built (column-parallel, its input gathered
  // over TP) saves its local input shard, not the gathered input, and gathers it again in
  // backward for its weight gradient, beside its dgrad: TransformerEngine's Linear and
  // LayerNormLinear (async all-gather, or userbuffers' bulk overlap under
  // ub_bulk_dgrad) and Megatron-Core's ColumnParallelLinear alike
  // (docs/research/memory-as-the-driver-counts-it.md 4). The gather moves what the
  // forward saved for all ranks (FP8 or BF16).
  // Per-tensor FP8 on TN-only GEMMs (Hopper) gathers the row-wise copy and transposes it
  // for the weight gradient (TE _all_gather_fp8 out._create_transpose()).
  void sp_local_input(double tp) {
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
    group.insert(group.end() - 1, g);
    if (sp_transpose_ && f.work.dtype != Dtype::bf16)
      group.insert(group.end() - 1,
                   sp_transpose_t(base + ".sp_transpose", f.module, gathered_bytes));
  }

  void finish() {
    out_.bwd = recomputed_;
    for (auto it = bwd_groups_.rbegin(); it != bwd_groups_.rend(); ++it)
      out_.bwd.insert(out_.bwd.end(), it->begin(), it->end());
  }

  bool fp8() const { return fp8_; }
  bool mxfp8() const { return mx_; }
  bool nvfp4() const { return fp4_; }

 private:
  KernelTemplate mem_t(const std::string& name, Module mod, double bytes) const {
    KernelTemplate t;
    t.name = name;
    t.module = mod;
    t.work = {KernelClass::memory, Dtype::bf16, 0, bytes, 0, 0, 0, 1, 2};
    return t;
  }
  // BF16 in, FP8 out (+1/32 or 1/128 scales); MXFP8 writes row- and column-wise copies.
  // NVFP4 writes `copies` copies of kNvfp4Bytes an element (see `quantized`).
  KernelTemplate quantize_t(const std::string& name, Module mod, double elems,
                            double copies = 2) const {
    KernelTemplate q = lib_t(
        name, mod, elems * (2 + (fp4_ ? copies * kNvfp4Bytes : (mx_ ? 2 : 1) * (1 + 1.0 / 32))));
    q.work.cls = KernelClass::quantize;
    q.pdl = stack_.pdl_quant;
    return q;
  }
  // The transpose of a gathered per-tensor FP8 tensor of `elems` one-byte values (TE
  // Float8TensorStorage._create_transpose: tex.fp8_transpose from Python), read and written.
  KernelTemplate sp_transpose_t(const std::string& name, Module mod, double elems) const {
    return lib_t(name, mod, 2 * elems);
  }
  // A memory-bound kernel a library API call launches from C++ (TE's quantize).
  KernelTemplate lib_t(const std::string& name, Module mod, double bytes) const {
    KernelTemplate t = mem_t(name, mod, bytes);
    t.library_launch = true;
    return t;
  }
  // A memory-bound kernel launched from C++ inside a library call, with no API call of its
  // own: TE's create_tensor zero-fills (at::zeros), swizzles and padding, current scaling's
  // amax zero, amax and scale kernels (nvte_* calls inside the quantize).
  KernelTemplate cpp_t(const std::string& name, Module mod, double bytes) const {
    KernelTemplate t = mem_t(name, mod, bytes);
    t.cpp_launch = true;
    return t;
  }
  // Current scaling and NVFP4 under sequence parallelism: the quantizer of a column-parallel
  // module's input (forward) and of a row-parallel module's output gradient (backward)
  // reduces its amax over the TP group before the scale and the cast, a c10d all-reduce
  // (MAX) the current stream waits for, called from C++ (TE module/_common.py 20-32
  // set_quantizer_amax_reduction_group; csrc/quantizer.cpp 1008-1027 for FP8 current
  // scaling, 2511-2538 for NVFP4, whose row- and column-wise amaxes go in one coalesced
  // call; docs/research/nvfp4.md 6). Delayed scaling reduces its amaxes once a chunk
  // (schedules/kernel_pricing.hpp), MXFP8's block scales need none. Inserted before the
  // first scale or cast of `q`.
  void insert_tp_amax(std::vector<KernelTemplate>& q, const std::string& name, Module mod) const {
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
  // NVFP4, per tensor (TE pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl @ v2.8
  // and d0067d0d): a one-thread kernel zeroes the global amax, one pass reads the BF16 input
  // for it (with the Hadamard transform, nvte_hadamard_transform_amax gives the row-wise
  // amax and the transformed column-wise one in the same pass), then the cast writes both
  // copies. Before TE 2.15 (stack.nvfp4_rht_fusion off) the transformed column-wise copy is
  // a kernel of its own that reads the input again (nvte_hadamard_transform_cast_fusion_
  // columnwise); TE #2555 fused it into the row-wise cast. A grouped GEMM's splits (TE
  // split_quantize, cast.cpp; TE 2.11 #2351 and 2.12 #2411, and MoE NVFP4 needs 26.02's TE
  // 2.12) share one zeroing, one grouped amax pass and, with the transform, one grouped
  // cast; without it each split still casts on its own. Stochastic rounding (gradients only)
  // slows the casts, TE #2412's rates (B300, DeepSeek-V3 shapes): row- and column-wise 6.4
  // TB/s rounding to nearest against 4.5 stochastic, row-wise alone 7.2 against 7.0. Each
  // cast allocates its six buffers (data, scales and amax of both copies) and wraps them in
  // a Python tensor (NVFP4Quantizer::create_tensor).
  void nvfp4_quantized(std::vector<KernelTemplate>& out, const std::string& name, Module mod,
                       double elems, int tensors, bool gradient) const {
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

  // The quantize kernel and, for MXFP8 and NVFP4, what its output tensors need before a GEMM.
  // `norm_amax`: the preceding norm kernel computed the amax (current scaling only);
  // `gradient`: an output gradient (NVFP4 rounds it stochastically).
  std::vector<KernelTemplate> quantized(const std::string& name, Module mod, double elems,
                                        double tensors, bool norm_amax = false,
                                        bool gradient = false) const {
    std::vector<KernelTemplate> out;
    const int n = static_cast<int>(tensors);
    // Block scales row- and column-wise, per tensor: E8M0 per 32 (MXFP8), E4M3 per 16 (NVFP4).
    const double scale_bytes = (fp4_ ? elems / 16 : elems / 32) * 2 / tensors;
    if (fp4_) {
      nvfp4_quantized(out, name, mod, elems, n, gradient);
      swizzles(out, name, mod, scale_bytes, n);
      return out;
    }
    if (mx_ && !stack_.mxfp8_alloc_fusion) {
      for (int t = 0; t < n; ++t)
        for (int z = 0; z < 2; ++z)
          out.push_back(cpp_t(name + ".scale_zeros", mod, scale_bytes / 2));
      out.front().host_allocs = 4 * n;
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
      out.push_back(quantize_t(name, mod, elems / tensors));
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
  // Every swizzle call (one tensor's, or TE's multi-tensor one) allocates its output
  // scale buffer before its launch (util.cpp swizzle_scaling_factors and
  // multi_tensor_swizzle_scaling_factors: 1 at::empty each; docs/research/te-host-inventory.md).
  // NVFP4's scales go through the same swizzle before cuBLASLt (TE extensions/gemm.cpp, v2.8).
  void swizzles(std::vector<KernelTemplate>& out, const std::string& name, Module mod,
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
  void push_fwd(KernelTemplate t) { out_.fwd.push_back(std::move(t)); }
  void push_bwd(std::vector<KernelTemplate> b) { bwd_groups_.push_back(std::move(b)); }

  LayerTemplate& out_;
  const StackSwitches& stack_;
  bool fp8_, mx_, fp4_;
  Nvfp4Recipe nvfp4_;
  Dtype dtype_;
  bool current_scaling_;
  std::int64_t cp_;
  bool fp8_attention_;
  std::int64_t seq_;
  bool sp_transpose_;  // per-tensor FP8 on TN-only GEMMs: a gathered tensor is transposed
  bool blockwise_;
  bool param_gather_hooks_;  // Megatron DDP's forward pre-hooks (module_calls_on_last)
  std::vector<std::vector<KernelTemplate>> bwd_groups_;
  std::vector<KernelTemplate> recomputed_;
};

template <class T>
bool has(const std::vector<T>& v, T m) {
  return std::find(v.begin(), v.end(), m) != v.end();
}

struct Shapes {
  double T;   // tokens per rank entering GEMMs (sequence-parallel all-gathered)
  double Tn;  // tokens per rank in norms and elementwise ops (sequence-parallel split)
  double h;
  double tp;
  bool tp_overlap = false;  // framework.tp_comm_overlap with sequence parallelism
  bool sequence_parallel() const { return tp > 1 && Tn < T; }  // the sequence split over TP
};

// Sequence parallelism's gather before a block's first GEMMs (backward: the reduce-scatter
// of their input gradient) and scatter after its last (backward: the gather of the output
// gradient); under framework.tp_comm_overlap each overlaps the GEMM beside it as TE's
// userbuffers do (workload::TpOverlap).
// The backward's reduce-scatter of the input gradient runs beside the weight gradient
// either way: userbuffers' bulk overlap (ub_bulk_wgrad), or without them an async NCCL
// reduce-scatter that TE's Linear and Megatron's ColumnParallelLinear wait for after the
// wgrad GEMM. `ub`: the module is a TE module (the output layer is Megatron's own, which
// userbuffers do not serve: its forward gather is exposed).
//
// Before an FP8 linear TransformerEngine quantizes the rank's shard and gathers it
// quantized, row-wise (TE module/linear.py 345-420, layernorm_linear.py, layernorm_mlp.py
// @ d0067d0d; userbuffers' gather alike): `input` says who quantizes the shard, the norm
// before (LayerNormLinear: `quantized`, see `norm`) or the gather here (a TE Linear on a
// BF16 input: `quantize`); `bf16`: the linear after it is not quantized. Returns whether
// that linear must still quantize its input (no quantized gather here).
enum class SpInput : std::uint8_t { bf16, quantized, quantize };
// `width`: the gathered input's hidden size (0: the model's; MTP's projection takes 2 h).
bool tp_gather(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name,
               bool ub = true, SpInput input = SpInput::bf16, double width = 0) {
  if (s.tp <= 1) return true;
  const double w = width > 0 ? width : s.h;
  const bool quantized = s.sequence_parallel() && b.fp8() && input != SpInput::bf16;
  if (quantized && input == SpInput::quantize)
    b.quantize(name + ".sp_quant", mod, s.Tn * w, 1, false, true);
  b.comm(name + ".sp_gather", mod, CommOp::tp_all_gather, CommOp::tp_reduce_scatter, s.T * w * 2);
  if (quantized)
    b.last_fwd().comm_bytes = s.T * w * b.gathered_bytes(1);  // backward: BF16 gradient
  if (s.sequence_parallel()) b.last_bwd().tp_overlap = workload::TpOverlap::bulk;
  if (s.tp_overlap && ub) b.last_fwd().tp_overlap = workload::TpOverlap::ring;
  return !quantized;
}
// After a column-parallel linear on the gathered input, under sequence parallelism
// (LayerBuilder::sp_local_input).
void sp_saved_shard(LayerBuilder& b, const Shapes& s) {
  if (s.sequence_parallel()) b.sp_local_input(s.tp);
}
// After a row-parallel linear: an FP8 one's output gradient is gathered quantized in
// backward (LayerBuilder::sp_quantized_grad_gather).
void tp_scatter(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name) {
  if (s.tp <= 1) return;
  b.comm(name + ".sp_scatter", mod, CommOp::tp_reduce_scatter, CommOp::tp_all_gather,
         s.T * s.h * 2);
  if (s.tp_overlap) {
    b.last_fwd().tp_overlap = workload::TpOverlap::pipeline;
    b.last_bwd().tp_overlap =
        workload::TpOverlap::ring;  // the gather, before kernels join its group
  }
  if (s.sequence_parallel() && b.fp8()) b.sp_quantized_grad_gather(s.tp);
}

// Megatron's fine-grained activation offloading (--offload-modules): the kernel just
// built keeps what it saves in host memory when its module is offloaded.
void offload(LayerBuilder& b, const workload::Framework& fw, workload::OffloadTarget t) {
  if (has(fw.offload, t)) b.last_fwd().offloaded = true;
}

// Bias-dropout-add with --hidden-dropout > 0 (Megatron-Core fused_bias_dropout.py, torch
// dropout): beyond the residual add, forward writes the one-byte mask and keeps it,
// backward reads it with the gradient; on the residual stream's (sequence-split) tokens.
void hidden_dropout(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Module mod,
                    const std::string& name) {
  if (in.training.hidden_dropout <= 0) return;
  const double elems = s.Tn * s.h;
  b.memory(name + ".dropout", mod, elems * (2 + 2 + 1), (2 + 1 + 2) / 5.0, elems);
}

// `target`: the offload module the norm's saved input belongs to (none: the final norm).
// `sp_gather`: a column-parallel TE linear gathers the output under sequence parallelism
// (LayerNormLinear's input quantizer reduces its amax over TP; see tp_gather).
void norm(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name, bool fused_quant,
          const workload::Framework& fw, std::optional<workload::OffloadTarget> target,
          bool sp_gather = false) {
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

// Core attention of `heads` heads (per rank) with q/k head size `qk` and v head size `v`:
// the fused kernel (`fwd_flops` causal, `bytes` read and kept: q, k, v, the output and
// the softmax statistics), or TE's unfused path (workload::AttentionBackend): two batched
// GEMMs over the whole s x s scores per head (2 x 2 s s (qk + v) per head forward, no
// causal skipping), the softmax between them reading and writing the BF16 scores, and
// the probabilities kept beside what the fused kernel keeps; the scores before the
// softmax and, in backward, their gradient are live one layer at a time.
// `kept`: what the fused kernel keeps for backward, when it differs from `bytes`.
// `window`: a sliding window's keys (0: causal over the whole sequence); the fused
// kernels skip the masked blocks, the unfused path computes every score and masks them.
// `unfused_extra`: bytes the unfused path keeps beyond the fused kernel (GQA: TE repeats k
// and v to every query head before its GEMMs, backends.py UnfusedDotProductAttention).
void core_attention(LayerBuilder& b, const TemplateInputs& in, Module mod, double heads, double qk,
                    double v, double fwd_flops, double bytes, double kv_bytes,
                    std::optional<double> kept = std::nullopt, std::int64_t window = 0,
                    double unfused_extra = 0) {
  if (in.framework.attention_backend == AttentionBackend::fused) {
    b.attention("attn.core", mod, fwd_flops, bytes, kv_bytes, window);
    if (kept) b.last_fwd().saved_bytes = *kept;
    return;
  }
  const double seq = static_cast<double>(in.training.seq_length);
  const double groups = static_cast<double>(in.training.micro_batch_size) * heads;
  const double scores = groups * seq * seq;  // elements of the BF16 scores
  b.bmm("attn.core.scores", mod, seq, seq, qk, groups);
  b.memory("attn.core.softmax", mod, scores * (2 + 2), 1.5);
  // What the whole path keeps sits on its last op, so offloading core_attn moves it.
  b.bmm("attn.core.context", mod, seq, v, seq, groups);
  b.last_fwd().saved_bytes = kept.value_or(bytes) + scores * 2 + unfused_extra;
  b.transient(2 * scores * 2);
}

// `windowed`: the layer is a sliding-window one (ModelConfig::sliding_window).
void attention_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, bool windowed) {
  const auto& m = in.model;
  const auto& rc = in.framework.recompute_modules;
  const double seq = static_cast<double>(in.training.seq_length);
  const double n = static_cast<double>(m.num_heads) / s.tp;
  const bool fused = in.stack.norm_quant_fusion;
  const std::size_t start = b.mark();
  // MLA's down-projections are TE Linears in 'duplicated' mode (Megatron-Core
  // multi_latent_attention.py 526-527, 573-574): no sequence-parallel gather and no TP amax
  // group on the hidden states; the latents are gathered before the up-projections. moesim
  // still gathers the BF16 hidden states there (not yet modeled: docs/research/nvfp4.md 6).
  const bool mla = m.attention == AttentionKind::mla;
  norm(b, s, Module::attn, "attn.norm", fused, in.framework, workload::OffloadTarget::attn_norm,
       !mla);
  if (has(rc, RecomputeModule::layernorm)) b.recompute_since(start);
  // The calls around it without weights of their own (Megatron-Core transformer_layer.py
  // _forward_attention): the TransformerLayer, its (MLA)SelfAttention, and the
  // pre_cross_attn_layernorm and cross_attention IdentityOps a decoder-only layer still calls;
  // on the norm kernel, after its layernorm recompute copy (which calls the norm alone).
  b.module_calls_at(start, 4, 0);
  tp_gather(b, s, Module::attn, "attn", true, mla ? SpInput::bf16 : SpInput::quantized);
  if (m.attention == AttentionKind::mla) {
    const auto& d = m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double v = static_cast<double>(d.v_head_dim);
    const double rq = static_cast<double>(d.q_lora_rank), rkv = static_cast<double>(d.kv_lora_rank);
    if (d.q_lora_rank > 0) {
      b.linear("attn.q_a", Module::attn, s.T, rq, s.h, true, false);
      sp_saved_shard(b, s);
      offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    }
    b.linear("attn.kv_a", Module::attn, s.T, rkv + static_cast<double>(d.qk_rope_head_dim), s.h,
             true, false);
    sp_saved_shard(b, s);
    offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    // Unquantized, both down-projections save the one normed input tensor (autograd
    // keeps references); FP8 linears each save their own quantized copy.
    if (!b.fp8() && d.q_lora_rank > 0) b.last_fwd().saved_bytes = 0;
    // The up-projections and their latent norms: what mla_up_proj recompute re-runs.
    const std::size_t up = b.mark();
    if (d.q_lora_rank > 0) {
      b.memory("attn.q_a_norm", Module::attn, s.T * rq * 2 * 2, 1.0, s.T * rq * 2);
      b.module_calls_on_last(1, 1);
      b.linear("attn.q_b", Module::attn, s.T, n * qk, rq, true, true);
    }
    b.memory("attn.kv_a_norm", Module::attn, s.T * rkv * 2 * 2, 1.0, s.T * rkv * 2);
    b.module_calls_on_last(1, 1);
    b.linear("attn.kv_b", Module::attn, s.T, n * (static_cast<double>(d.qk_nope_head_dim) + v), rkv,
             true, true);
    // Megatron-Core's fused MLA RoPE (fused_mla_yarn_rope_apply.py): one kernel rotates
    // q's rope part in place over all of q; one splits kv_b's output into k (k_nope plus
    // the shared, rotated k_pe broadcast over heads) and v. Backward moves the same bytes.
    const double nope = static_cast<double>(d.qk_nope_head_dim),
                 pe = static_cast<double>(d.qk_rope_head_dim);
    b.memory("attn.rope_q", Module::attn, s.T * n * qk * 2 * 2);
    b.memory("attn.rope_kv", Module::attn,
             s.T * (n * (nope + v) + pe) * 2 + s.T * n * (qk + v) * 2);
    // mla_up_proj recompute (Megatron-Core multi_latent_attention.py: the up-projections
    // and RoPE run under CheckpointWithoutOutput, whose output is discarded once core
    // attention has run and recomputed before its backward): the up-projected q, k, v are
    // not kept, so core attention keeps only its output and log-sum-exp.
    const bool up_recompute =
        has(rc, RecomputeModule::mla_up_proj) || has(rc, RecomputeModule::up_proj);
    if (up_recompute) b.recompute_since(up);
    // Core attention, causal: forward FLOPs 2 T seq (n qk / 2 + n v / 2) (Megatron).
    // It saves q, k, v and its output o (2 bytes each), o in E5M6 (1.5 bytes) where
    // attn_output is cached low-precision (one copy, which o_proj's weight gradient reads
    // too); plus the log-sum-exp (4 bytes per head and token).
    const bool o_e5m6 =
        has(in.framework.low_precision_activations, workload::LowPrecisionActivation::attn_output);
    const double o_bytes = s.T * n * v * (o_e5m6 ? 1.5 : 2);
    const std::size_t core = b.mark();
    core_attention(b, in, Module::attn, n, qk, v, 2 * s.T * seq * (n * qk / 2 + n * v / 2),
                   (up_recompute ? 0 : s.T * n * (2 * qk + v) * 2) + o_bytes + s.T * n * 4,
                   s.T * n * (qk + v) * 2);
    b.module_calls_on_last(2, 0);  // TE's DotProductAttention and the backend module it calls
    offload(b, in.framework, workload::OffloadTarget::core_attn);
    const bool core_recompute = has(rc, RecomputeModule::core_attn);
    if (core_recompute) b.recompute_since(core);
    b.linear("attn.o_proj", Module::attn, s.T, s.h, n * v, true, true);
    offload(b, in.framework, workload::OffloadTarget::attn_proj);
    // o_proj's saved input is core attention's saved output: unquantized, or the E5M6 cache.
    if (!core_recompute && (o_e5m6 || !b.fp8())) b.last_fwd().saved_bytes = 0;
  } else {
    const double d = static_cast<double>(m.head_dim);
    const double g = static_cast<double>(m.num_kv_heads) / s.tp;
    b.linear("attn.qkv", Module::attn, s.T, (n + 2 * g) * d, s.h, true, false);
    sp_saved_shard(b, s);
    offload(b, in.framework, workload::OffloadTarget::qkv_linear);
    // Qwen3's per-head RMSNorms of q and k (--qk-layernorm: SelfAttention's q_layernorm and
    // k_layernorm, TENorm modules, get_query_key_value_tensors in attention.py): one kernel
    // each; each keeps its input for backward.
    if (m.qk_layernorm) {
      b.memory("attn.q_norm", Module::attn, s.T * n * d * 2 * 2, 1.0, s.T * n * d * 2);
      b.module_calls_on_last(1, 1);
      b.memory("attn.k_norm", Module::attn, s.T * g * d * 2 * 2, 1.0, s.T * g * d * 2);
      b.module_calls_on_last(1, 1);
    }
    if (m.learned_positions == 0) b.memory("attn.rope", Module::attn, s.T * (n + g) * d * 2 * 2);
    const std::size_t core = b.mark();
    // TE's DotProductAttention keeps q, k, v, its output and the softmax statistics
    // (ctx.save_for_backward(q, k, v, out, aux_ctx_tensors): 4 bytes a head and token).
    const double kept = s.T * (2 * n + 2 * g) * d * 2 + s.T * n * 4;
    // Keys per query: s / 2 causal; under a window w < s, (w s - w (w - 1) / 2) / s.
    const double w = windowed ? static_cast<double>(m.sliding_window) : seq;
    const double keys = w < seq ? w - w * (w - 1) / (2 * seq) : seq / 2;
    core_attention(b, in, Module::attn, n, d, d, 4 * s.T * keys * n * d,
                   s.T * (n + 2 * g) * d * 2 * 2, s.T * 2 * g * d * 2, kept,
                   windowed ? m.sliding_window : 0, s.T * 2 * (n - g) * d * 2);
    b.module_calls_on_last(2, 0);  // TE's DotProductAttention and the backend module it calls
    offload(b, in.framework, workload::OffloadTarget::core_attn);
    const bool core_recompute = has(rc, RecomputeModule::core_attn);
    if (core_recompute) b.recompute_since(core);
    b.linear("attn.o_proj", Module::attn, s.T, s.h, n * d, true, true);
    offload(b, in.framework, workload::OffloadTarget::attn_proj);
    // o_proj's saved input is core attention's saved output unless FP8 quantizes a copy.
    if (!core_recompute && !b.fp8()) b.last_fwd().saved_bytes = 0;
  }
  tp_scatter(b, s, Module::attn, "attn");
  hidden_dropout(b, in, s, Module::attn, "attn");
}

void dense_mlp(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& m = in.model;
  const double f = static_cast<double>(m.ffn_hidden_size) / s.tp;
  const double e = static_cast<double>(m.ffn_matrices() - 1);  // gate+up = 2 x F
  const std::size_t start = b.mark();
  norm(b, s, Module::mlp, "mlp.norm", in.stack.norm_quant_fusion, in.framework,
       workload::OffloadTarget::mlp_norm, true);
  const bool whole = has(in.framework.recompute_modules, RecomputeModule::mlp) ||
                     has(in.framework.recompute_modules, RecomputeModule::full);
  if (!whole && has(in.framework.recompute_modules, RecomputeModule::layernorm))
    b.recompute_since(start);
  tp_gather(b, s, Module::mlp, "mlp", true, SpInput::quantized);
  b.linear("mlp.fc1", Module::mlp, s.T, e * f, s.h, true, false);
  b.module_calls_on_last(1, 0);  // the MLP module around its linears
  sp_saved_shard(b, s);
  b.memory("mlp.act", Module::mlp, s.T * (e * f + f) * 2, 1.0, s.T * e * f * 2);
  b.linear("mlp.fc2", Module::mlp, s.T, s.h, f, true, true);
  tp_scatter(b, s, Module::mlp, "mlp");
  if (whole) b.recompute_since(start);
  hidden_dropout(b, in, s, Module::mlp, "mlp");  // Megatron's mlp_bda, outside the recomputed MLP
}

void moe_mlp(LayerBuilder& b, const TemplateInputs& in, const Shapes& s) {
  const auto& m = in.model;
  const auto& p = in.parallelism;
  const auto& fw = in.framework;
  const double E = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.topk);
  const double ep = static_cast<double>(p.ep);
  // Dropless MoE learns its per-expert counts on the device and the host must wait for
  // them; token dropping (capacity known on the host) and HybridEP's pre-sized buffers
  // (moe_expert_rank_capacity_factor) remove that sync.
  const bool host_sync = !in.training.capacity_factor && !fw.moe_expert_rank_capacity_factor;
  const bool nccl = fw.dispatcher == hw_models::Dispatcher::alltoall ||
                    fw.dispatcher == hw_models::Dispatcher::allgather;
  // The layernorm recompute module covers both norms of a layer (Megatron-Core
  // --recompute-modules layernorm: input_layernorm and pre_mlp_layernorm).
  const std::size_t norm_start = b.mark();
  norm(b, s, Module::moe_router, "moe.norm", in.stack.norm_quant_fusion, fw,
       workload::OffloadTarget::mlp_norm);
  if (has(fw.recompute_modules, RecomputeModule::layernorm)) b.recompute_since(norm_start);
  // Tokens this rank routes: its own sequence-parallel share. Megatron-Core's MoE layer
  // takes the [S/TP, B, h] hidden states as they are; the router and the dispatcher work
  // on those num_local_tokens, and MoE parallel folding puts the TP ranks in the EP group,
  // so no TP gather precedes them (megatron/core/transformer/moe/moe_layer.py, router.py,
  // token_dispatcher.py). Only a TP-sharded shared expert gathers the sequence (its
  // column-parallel fc1 with sequence parallelism) and reduce-scatters its output.
  const double Tm = s.Tn;
  const double etp = static_cast<double>(p.etp);
  // `moe` recompute (Megatron-Core MoELayer: the whole layer's forward under one
  // checkpoint whose input is the pre-MLP norm's output): router, dispatch, experts,
  // shared expert and combine run again before the layer's backward, their collectives
  // and token-count sync included, and only the checkpoint's input is kept. The finer
  // moe_act and shared_experts checkpoints inside it are then moot.
  const bool moe_recompute = has(fw.recompute_modules, RecomputeModule::moe);
  const std::size_t moe_start = b.mark();

  // The shared expert (no shared-expert overlap). Captured in a CUDA graph it runs with
  // the router, first (Megatron-Core effebd81f4 MoELayer: shared experts, route,
  // preprocess; NVIDIA's step-10 profile shows it inside the graphed region before
  // dispatch). Eager it runs after the dispatch is launched (NVIDIA's step-6 profile:
  // graphed attention + router, dispatch, eager shared expert, routed experts, combine).
  const bool shared_captured = CaptureSet(fw, in.stack)[Module::shared_expert];
  // Bytes per cached SwiGLU input value: BF16, or FP8 with a 4-byte scale per 128.
  const double act_bytes =
      has(fw.low_precision_activations, workload::LowPrecisionActivation::swiglu_input)
          ? 1 + 4.0 / 128
          : 2;
  const auto shared_expert = [&] {
    if (m.shared_expert_ffn_hidden_size <= 0) return;
    const double e2 = static_cast<double>(m.ffn_matrices() - 1);
    const double fs = static_cast<double>(m.shared_expert_ffn_hidden_size) / s.tp;
    const std::size_t start = b.mark();
    const bool quantize_input =
        tp_gather(b, s, Module::shared_expert, "shared", true, SpInput::quantize);
    b.linear("shared.fc1", Module::shared_expert, s.T, e2 * fs, s.h, true, quantize_input);
    b.module_calls_on_last(1, 0);  // the SharedExpertMLP module around its linears
    sp_saved_shard(b, s);
    if (!b.fp8()) b.last_fwd().saved_bytes = 0;  // the router's saved input, the same tensor
    b.memory("shared.act", Module::shared_expert, s.T * (e2 * fs + fs) * 2, 1.0,
             s.T * e2 * fs * act_bytes);
    b.linear("shared.fc2", Module::shared_expert, s.T, s.h, fs, true, true);
    tp_scatter(b, s, Module::shared_expert, "shared");
    if (!moe_recompute && has(fw.recompute_modules, RecomputeModule::shared_experts))
      b.recompute_since(start);
  };
  if (shared_captured) shared_expert();
  // Permute/unpermute over the routing map before TE PR 1927 (dc97cc9efc, first in TE 2.6):
  // each token's program walks all E experts' row-map entries for every hidden block
  // (transformer_engine/pytorch/triton/permutation.py _permute_kernel at v2.3: `for
  // expert_idx in range(num_experts)`, a dependent load each), where the optimized kernel
  // walks only the token's k routed rows (at v2.6: `for idx in tl.range(n_routed)`). The
  // data moved is the same, (1 + k) rows a token; the old kernel adds (E - k) skipped
  // row-map loads per token and block. So
  //   slowdown = 1 + c (E - k) / (1 + k),
  // with c from the one measured point: NVIDIA's baseline profile draws DeepSeek-V3's
  // global permute (k = 8 of E = 256) at about 0.7 ms (docs/research/gb200-journey-mechanisms.md,
  // image1) where the bandwidth model prices the optimized kernel at 0.162 ms (GB200, 4096
  // tokens x top-8 x 7168 BF16): 4.3x, so c = 3.3 x 9 / 248 = 0.120. Qwen3's 8 of 128:
  // 2.6x; Mixtral's 2 of 8: 1.24x.
  constexpr double kOldPermuteRefSlowdown = 4.3, kOldPermuteRefE = 256, kOldPermuteRefK = 8;
  constexpr double kOldPermuteSkipCost =
      (kOldPermuteRefSlowdown - 1) * (1 + kOldPermuteRefK) / (kOldPermuteRefE - kOldPermuteRefK);
  const double permute_slowdown =
      in.stack.permute_fusion_v2 ? 1.0 : 1 + kOldPermuteSkipCost * (E - k) / (1 + k);

  // Router: the GEMM (FP32 logits) and its small kernels (top-k, scores, aux loss, ...).
  // Counts: 72 unfused, 31 fused; with DeepEP/HybridEP, router + EP preprocess = 17
  // (shared/reference/gb200-journey.md, steps 3-4).
  b.linear("moe.router", Module::moe_router, Tm, E, s.h, false, false, 1, false);
  b.module_calls_on_last(1, 0);  // the MoELayer module around the router and the experts
  b.last_fwd().checkpoint_input = moe_recompute;  // its input is the checkpoint's
  // Host-only torch calls of router + EP preprocess in one forward, counted from
  // Megatron-Core effebd81f4 (docs/research/router-host-inventory.md): 52 unfused, 48
  // fused (plus 8 allocations in TE's fused router), 26 fused with the flex dispatcher.
  // Router fusion (--moe-router-fusion: TE's fused top-k and score kernels in TopKRouter,
  // megatron/core/transformer/moe/router.py) acts in the router, before any token
  // dispatcher; the flex dispatchers' count of 17 is the fused router's. Unfused, every
  // dispatcher's router runs the unfused kernels: 72 - 31 = 41 more forward kernels,
  // 32 - 14 = 18 more backward, 52 - 48 = 4 more host calls.
  const bool unfused_flex = !nccl && !in.stack.router_fusion;
  b.last_fwd().host_ops +=
      nccl ? (in.stack.router_fusion ? 48 : 52) : 26 + (unfused_flex ? 52 - 48 : 0);
  if (nccl && in.stack.router_fusion) b.last_fwd().host_allocs = 8;
  const double probs = Tm * E * 4;
  // Those counts are DeepSeek-V3's router: sigmoid scores, expert bias, group-limited top-k,
  // a scaling factor, the sequence aux loss. Unfused, the router runs one eager op per step
  // of its routing, so a softmax router without groups runs fewer (Megatron-Core
  // moe_utils.py topk_softmax_with_capacity 527-650 at 6a6cd47, topk_routing_with_score_
  // function at effebd81f4; router.py compute_routing_scores_for_aux_loss; rows of
  // docs/research/router-host-inventory.md 2.1 and 4):
  //   group-limited top-k (rows 14-25: 13 ops) where one torch.topk does (2): 11 forward;
  //   sigmoid: the normalisation (sum, + eps, divide) in the routing and again in the
  //   aux-loss scores (rows 28-30, 41-43: 6), the expert bias (the biased copy, the gather of
  //   the unbiased scores, the bias update: rows 12, 26, 65 eager: 4), the scaling factor
  //   (row 31: 1) where softmax normalises in its one kernel: 11 forward; in backward the
  //   two DivBackward0 (6 each) and their gradient meetings (1 each), the scale and the
  //   sequence loss's / bsz: 16.
  // Fused (TE's fused top-k, score and aux-loss kernels), one kernel each whatever the method.
  const bool plain_topk = in.model.router_groups == 0 || in.model.router_topk_groups == 0;
  const bool softmax = in.model.router_scoring == "softmax";
  const int unfused_fwd_fewer = (plain_topk ? 11 : 0) + (softmax ? 11 : 0),
            unfused_bwd_fewer = softmax ? 16 : 0;
  const int router_kernels = nccl ? (in.stack.router_fusion ? 31 : 72 - unfused_fwd_fewer) - 1
                                  : 17 - 1 - 1 + (unfused_flex ? 72 - unfused_fwd_fewer - 31 : 0);
  // Backward: about 32 GPU ops unfused, 14 fused, the router GEMM's two included
  // (docs/research/router-host-inventory.md).
  b.small_kernels("moe.router_k", Module::moe_router, router_kernels, probs,
                  (!in.stack.router_fusion ? 32 - unfused_bwd_fewer : 14) - 2);
  b.keep_last(probs);  // routing probabilities and the top-k map

  const double tokens_out = Tm * k;                  // routed token copies each rank sends
  const double tokens_in = tokens_out * in.ep_load;  // and the hottest rank receives
  // Physical experts per rank: E / ep, plus parallelism.eplb's copies (workload/eplb.hpp).
  const double local_experts = static_cast<double>(physical_experts(m, p)) / ep;
  const double h_bytes = s.h * 2;
  bool hybridep_copy = false;  // HybridEP without its copy fused into permute/unpermute
  // FP8 dispatch (Framework::ep_fp8_dispatch): the forward dispatch carries 1 + 4/128 bytes
  // per value; its backward (a combine of gradients) stays BF16.
  const auto fp8_dispatch = [&] {
    if (!fw.ep_fp8_dispatch) return;
    KernelTemplate& d = b.last_fwd();
    d.comm_element_bytes = 1 + 4.0 / 128;
    d.comm_bytes = tokens_in * s.h * d.comm_element_bytes;
  };
  // Host work of the dispatcher paths beyond their kernels, counted in Megatron-Core
  // effebd81f4 with DeepEP / HybridEP of autumn 2025 (docs/research/moe-dispatch-experts-
  // host-inventory.md 4-6): allocations and host-only torch calls per forward and backward.
  if (nccl) {
    // EP preprocess: per-expert counts, their exchange; the host needs them to size the
    // all-to-all (Megatron's alltoall dispatcher): a device-host sync in dropless mode.
    b.small_kernels("moe.preprocess", Module::moe_preprocess, 2, E * 8 + tokens_out * 4, 1);
    if (host_sync)
      b.mark_sync_on_last(1);  // the host blocks after launching the global permute (moe_dispatch)
    b.memory("moe.global_permute", Module::moe_dispatch, Tm * h_bytes + tokens_out * h_bytes);
    b.gather_last();
    b.slow_last(permute_slowdown);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    // Megatron's alltoall dispatcher: the sender's top-k permuted copy and the all-to-all's
    // output live until the local sort has made fc1's input (and the same again for the
    // gradients in backward). DeepEP and HybridEP write into their own buffers: no copy
    // (NVIDIA's GB200 journey, step 4: DeepEP lowered the peak memory).
    b.transient(tokens_out * h_bytes + tokens_in * h_bytes);
    b.last_fwd().host_allocs = 10;  // forward 10, backward 7 (inventory 5, 6.3)
    b.last_fwd().host_ops = 12;
    b.last_bwd().host_allocs = 7;
    if (!shared_captured) shared_expert();
    b.memory("moe.local_permute", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.gather_last();
  } else if (fw.dispatcher == hw_models::Dispatcher::deepep) {
    b.small_kernels("moe.preprocess", Module::moe_preprocess, 1, E * 8 + tokens_out * 4, 1);
    // notify_dispatch exchanges per-rank, per-expert counts (4 bytes each); the CPU spins
    // until they arrive, then launches the data dispatch on DeepEP's stream.
    b.comm("moe.dispatch_notify", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_dispatch,
           E * 4, host_sync, false);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    fp8_dispatch();
    b.last_fwd().host_allocs = 22;  // forward 22, backward 13 (inventory 5, 6.3)
    b.last_fwd().host_ops = 11;
    b.last_bwd().host_allocs = 13;
    if (!shared_captured) shared_expert();
    // Megatron's permute after DeepEP: indices to multi-hot and the row-id map (Triton
    // kernels launched from Python), then TE's permute.
    b.small_kernels("moe.permute_map", Module::moe_dispatch, 4, tokens_in * 4 * 2, 2);
  } else {
    // HybridEP dispatch_with_permute (inventory 4.3): all-gather of the routing maps over
    // the EP group, metadata kernels (fill, memset, scan), a blocking copy of the received
    // count to the host; the dispatch (with its two one-thread sync kernels); permute
    // processing, a second blocking copy (tokens per expert: it waits for the whole
    // dispatch); then the permute, which carries the copy out of HybridEP's registered
    // buffer and the padding. Backward reuses the handle: no all-gather, no syncs.
    hybridep_copy = !in.stack.hybridep_permute_fusion;
    b.comm("moe.routing_map_gather", Module::moe_dispatch, CommOp::ep_all_gather, CommOp::none,
           Tm * E, false, false);
    b.small_kernels("moe.hybridep_meta", Module::moe_dispatch, 3, Tm * ep * 4 + Tm * E, 0);
    b.last_fwd().host_allocs = 6;
    if (host_sync) b.mark_sync_on_last();
    b.small_kernels("moe.dispatch_flag", Module::moe_dispatch, 1, 0);
    b.comm("moe.dispatch", Module::moe_dispatch, CommOp::ep_dispatch, CommOp::ep_combine,
           tokens_in * h_bytes);
    fp8_dispatch();
    b.small_kernels("moe.dispatch_done", Module::moe_dispatch, 1, 0);
    b.small_kernels("moe.permute_processing", Module::moe_dispatch, 1,
                    (tokens_in + 32 * local_experts) * 4, 0);
    b.last_fwd().host_allocs = 4;
    if (host_sync) b.mark_sync_on_last();
    if (!shared_captured) shared_expert();
  }
  if (!nccl) {
    // HybridEP receives into its registered buffer; the tokens are copied out (D2D), then
    // permuted and padded. Fused (journey step 11): one kernel does all three, so the
    // permute below stands for it; unfused: the copy is a kernel of its own ("about
    // 10%-20% of the communication time", shared/reference/gb200-journey.md).
    if (hybridep_copy) b.memory("moe.dispatch_copy", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.memory("moe.permute", Module::moe_dispatch, tokens_in * h_bytes * 2);
    b.gather_last();
    b.slow_last(permute_slowdown);
  }

  // Expert tensor parallelism (etp = tp > 1): the received tokens are all-gathered over
  // the expert-TP group, each rank computes its 1/etp of every expert's FFN on all of
  // them, and the outputs are reduce-scattered before the combine (Megatron-Core
  // MoEAlltoAllTokenDispatcher with tp_size > 1).
  const auto etp_comm = [&](const std::string& name, CommOp fwd, CommOp bwd) {
    if (p.etp > 1) b.comm(name, Module::experts, fwd, bwd, tokens_in * etp * h_bytes);
  };
  etp_comm("moe.etp_gather", CommOp::tp_all_gather, CommOp::tp_reduce_scatter);
  // Routed experts: E / ep local experts, tokens_in x etp x ep / E tokens each (balanced).
  const double m_per = tokens_in * etp / local_experts;
  const double f = static_cast<double>(m.moe_ffn_hidden_size) / static_cast<double>(p.etp);
  const double e = static_cast<double>(m.ffn_matrices() - 1);
  const std::size_t experts_start = b.mark();
  b.linear("moe.fc1", Module::experts, m_per, e * f, s.h, true, true, local_experts);
  b.module_calls_on_last(1, 0);  // the TEGroupedMLP module around fc1 and fc2
  offload(b, fw, workload::OffloadTarget::expert_fc1);
  const std::size_t act = b.mark();
  b.memory("moe.act", Module::experts, tokens_in * etp * (e * f + f) * 2, 1.0,
           tokens_in * etp * e * f * act_bytes);
  offload(b, fw, workload::OffloadTarget::moe_act);
  offload(b, fw, workload::OffloadTarget::expert_fc1_act);
  // moe_act recompute (Megatron-Core: the SwiGLU under a checkpoint): its input, fc1's
  // output, stays as the checkpoint's input; its output, fc2's input, is discarded and
  // recomputed before fc2's backward.
  const bool act_recompute = !moe_recompute && has(fw.recompute_modules, RecomputeModule::moe_act);
  if (act_recompute) {
    b.recompute_since(act);
    b.last_fwd().checkpoint_input = true;
  }
  b.linear("moe.fc2", Module::experts, m_per, s.h, f, true, true, local_experts);
  if (act_recompute) b.last_fwd().saved_bytes = 0;
  // Full-iteration CUDA graphs size the experts' buffers statically for the rank capacity
  // (tokens x top-k x moe_expert_rank_capacity_factor), so what they save for backward
  // is that large; paged stashing (moe_paged_stash) keeps only the tokens that arrived.
  if (CaptureSet(fw, in.stack).full_iteration() && fw.moe_expert_rank_capacity_factor &&
      !fw.moe_paged_stash)
    b.scale_saved_since(experts_start,
                        std::max(1.0, *fw.moe_expert_rank_capacity_factor / in.ep_load));
  etp_comm("moe.etp_scatter", CommOp::tp_reduce_scatter, CommOp::tp_all_gather);

  if (nccl) {
    b.memory("moe.local_unpermute", Module::moe_combine, tokens_in * h_bytes * 2);
    b.gather_last();
    b.comm("moe.combine", Module::moe_combine, CommOp::ep_combine, CommOp::ep_dispatch,
           tokens_in * h_bytes);
    b.memory("moe.unpermute", Module::moe_combine, tokens_out * h_bytes + Tm * h_bytes);
    b.gather_last();
    b.slow_last(permute_slowdown);
  } else {
    b.memory("moe.unpermute", Module::moe_combine, tokens_in * h_bytes * 2);
    b.gather_last();
    b.slow_last(permute_slowdown);
    // HybridEP combines from its registered buffer: unfused, a D2D copy into it; its
    // combine brackets the kernel with the same two one-thread sync kernels.
    if (hybridep_copy) b.memory("moe.combine_copy", Module::moe_combine, tokens_in * h_bytes * 2);
    if (fw.dispatcher == hw_models::Dispatcher::hybridep)
      b.small_kernels("moe.combine_flag", Module::moe_combine, 2, 0);
    b.comm("moe.combine", Module::moe_combine, CommOp::ep_combine, CommOp::ep_dispatch,
           tokens_in * h_bytes);
  }
  if (moe_recompute) b.recompute_since(moe_start, true);
  hidden_dropout(b, in, s, Module::moe_combine, "moe");
}

}  // namespace

const sim_core::NameTable<Module>& module_names() {
  static constexpr std::array<sim_core::NameEntry<Module>, kModuleCount> kEntries{{
      {Module::embedding, "embedding", "input embedding"},
      {Module::attn, "attn", "attention block (norm, projections, core attention)"},
      {Module::mlp, "mlp", "dense-layer MLP"},
      {Module::moe_router, "moe_router", "pre-MLP norm and router"},
      {Module::moe_preprocess, "moe_preprocess", "EP preprocess before dispatch"},
      {Module::moe_dispatch, "moe_dispatch", "token dispatch and permute"},
      {Module::experts, "experts", "routed experts (grouped GEMMs, activation)"},
      {Module::shared_expert, "shared_expert", "shared expert"},
      {Module::moe_combine, "moe_combine", "unpermute and combine"},
      {Module::head, "head", "output layer"},
      {Module::loss, "loss", "loss"},
  }};
  static constexpr sim_core::NameTable<Module> kTable{kEntries};
  return kTable;
}

CaptureSet::CaptureSet(const Framework& fw, const StackSwitches& stack) {
  const auto& scopes = fw.cuda_graph_scope;
  const auto on = [&](CudaGraphScope s) {
    return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
  };
  const auto set = [&](Module m, bool v) { on_[static_cast<std::size_t>(m)] = v; };
  full_ = on(CudaGraphScope::full_iteration);
  on_.fill(full_);
  if (full_) return;
  set(Module::attn, on(CudaGraphScope::attn));
  set(Module::mlp, on(CudaGraphScope::mlp));
  set(Module::moe_router, on(CudaGraphScope::moe_router) || on(CudaGraphScope::moe));
  set(Module::moe_preprocess, on(CudaGraphScope::moe_preprocess) || on(CudaGraphScope::moe));
  for (Module m : {Module::moe_dispatch, Module::experts, Module::moe_combine})
    set(m, on(CudaGraphScope::moe));
  set(Module::shared_expert,
      on(CudaGraphScope::moe) || (!scopes.empty() && stack.cuda_graph_shared_expert));
}

ModelTemplates build_templates(const TemplateInputs& in) {
  const auto& p = in.parallelism;
  Shapes s;
  s.tp = static_cast<double>(p.tp);
  s.h = static_cast<double>(in.model.hidden_size);
  s.T = static_cast<double>(in.training.micro_batch_size * in.training.seq_length) /
        static_cast<double>(p.cp);
  s.Tn = p.sequence_parallel ? s.T / s.tp : s.T;
  s.tp_overlap = in.framework.tp_comm_overlap && p.sequence_parallel && p.tp > 1;

  ModelTemplates t;
  const bool full = has(in.framework.recompute_modules, RecomputeModule::full);
  for (const bool windowed : {false, true}) {
    if (windowed && !in.model.any_windowed()) break;
    for (const bool moe : {false, true}) {
      LayerTemplate& lt = t.decoder(moe, windowed);
      LayerBuilder b(in, lt);
      const std::size_t start = b.mark();
      attention_block(b, in, s, windowed);
      if (moe) {
        if (in.model.is_moe()) moe_mlp(b, in, s);
      } else {
        dense_mlp(b, in, s);
      }
      if (full) b.recompute_since(start);
      b.finish();
    }
  }
  {
    LayerBuilder b(in, t.embedding);
    // Word lookup (read, write); learned positions add a second lookup and the sum.
    const double lookups = in.model.learned_positions > 0 ? 4 : 2;
    b.memory("embedding", Module::embedding, s.Tn * s.h * 2 * lookups,
             2.0);  // keeps token ids only
    b.finish();
  }
  {
    LayerBuilder b(in, t.head);
    const double v = static_cast<double>(in.padded_vocab) / s.tp;
    norm(b, s, Module::head, "head.norm", true, in.framework, std::nullopt);
    // The output layer is column-parallel (Megatron-Core's own ColumnParallelLinear, no
    // userbuffers): under sequence parallelism it gathers its input first.
    // Megatron --fp8-output-proj runs the LM head as a TE linear under MXFP8.
    const bool fp8_head = in.framework.fp8_output_proj;
    const bool quantize_input =
        tp_gather(b, s, Module::head, "head", false, fp8_head ? SpInput::quantize : SpInput::bf16);
    b.linear("head.output", Module::head, s.T, v, s.h, fp8_head, quantize_input, 1, fp8_head);
    sp_saved_shard(b, s);
    // The loss keeps a logit-sized tensor for backward (workload::CrossEntropy): TE's the
    // BF16 gradient written over the logits (backward scales it: read 2, write 2);
    // Megatron's native kernels the FP32 exponentials, after an FP32 cast (read 2, write
    // 4) and, unfused, separate max, subtract, exp, sum and divide passes over them
    // (4 + 8 + 8 + 4 + 8 bytes); their backward turns the exponentials into the gradient
    // in place (read 4, write 4) and casts it to BF16 (read 4, write 2).
    const auto ce = in.framework.cross_entropy;
    const double ce_traffic = ce == CrossEntropy::te       ? 2 + 2
                              : ce == CrossEntropy::native ? 2 + 4 + 4
                                                           : 2 + 4 + 32;
    const double ce_bwd = ce == CrossEntropy::te ? 2 + 2 : 4 + 4 + 4 + 2;
    b.memory("loss.cross_entropy", Module::loss, s.T * v * ce_traffic, ce_bwd / ce_traffic,
             s.T * v * (ce == CrossEntropy::te ? 2 : 4));
    b.finish();
  }
  {
    // An MTP module (Megatron-Core multi_token_prediction.py; DeepSeek-V3 report 2.2):
    // the shared embedding looks up the shifted tokens; RMSNorm of them and of the
    // previous depth's hidden states, concatenated and projected back to h (eh_proj,
    // 2h -> h); a decoder layer of the last layer's kind; then the shared output head
    // with its final norm and loss.
    LayerTemplate pre;
    LayerBuilder b(in, pre);
    b.memory("mtp.embedding", Module::embedding, s.Tn * s.h * 2 * 2, 2.0);
    norm(b, s, Module::head, "mtp.enorm", true, in.framework, std::nullopt);
    norm(b, s, Module::head, "mtp.hnorm", true, in.framework, std::nullopt);
    const bool quantize_input =
        tp_gather(b, s, Module::head, "mtp", true, SpInput::quantize, 2 * s.h);
    b.linear("mtp.eh_proj", Module::head, s.T, s.h / s.tp, 2 * s.h, true, quantize_input);
    sp_saved_shard(b, s);
    b.finish();
    const LayerTemplate& layer = in.model.mtp_is_moe() ? t.moe : t.dense;
    const std::array<const LayerTemplate*, 3> parts{&pre, &layer, &t.head};
    for (const LayerTemplate* part : parts)
      t.mtp.fwd.insert(t.mtp.fwd.end(), part->fwd.begin(), part->fwd.end());
    for (auto part = parts.rbegin(); part != parts.rend(); ++part)
      t.mtp.bwd.insert(t.mtp.bwd.end(), (*part)->bwd.begin(), (*part)->bwd.end());
    t.mtp.transient_bytes =
        std::max({pre.transient_bytes, layer.transient_bytes, t.head.transient_bytes});
  }
  return t;
}

}  // namespace moesim::workload
