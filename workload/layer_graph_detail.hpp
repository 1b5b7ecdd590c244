// workload/layer_graph_detail.hpp: what the pieces of the layer templates' builder
// (workload/layer_graph.hpp) share, internal to them: LayerBuilder, which accumulates a
// layer's forward kernels and the backward kernels that undo them, and the helpers on top
// of it (sequence parallelism's gathers and scatters, norms, offloading, hidden dropout),
// both defined in layer_graph_builder.cpp; the blocks of a decoder layer, attention
// (layer_graph_attention.cpp), the MoE MLP with its dispatchers (layer_graph_moe.cpp) and
// a hybrid model's Mamba mixer (layer_graph_mamba.cpp);
// layer_graph.cpp assembles them into the model's templates.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/chunk_kernels.hpp"
#include "workload/layer_graph.hpp"

namespace moesim::workload::detail {

using hw_models::ComputeWork;
using hw_models::Dtype;
using hw_models::KernelClass;

// Accumulates one layer's forward kernels and, per forward op, the backward kernels that
// undo it; backward runs the ops' groups in reverse order.
class LayerBuilder {
 public:
  LayerBuilder(const TemplateInputs& in, LayerTemplate& out);

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
  // Under LoRA (training.lora) every linear but an `adapter`'s is frozen: TE and Megatron
  // compute its weight gradient only when the weight requires one (TE linear.py
  // ctx.requires_wgrad, Megatron layers.py linear_with_frozen_weight) and keep no input
  // for it (TE backward_needs_input), so it runs fprop and dgrad and saves nothing.
  void linear(const std::string& name, Module mod, double m, double n, double k, bool fp8_ok,
              bool quantize_input, double groups = 1, bool te = true, bool adapter = false);

  // The linear just built takes no input gradient (its input is detached: DeepSeek-V4's
  // indexer): its backward keeps the weight gradient alone, which then carries the TE call.
  void drop_last_dgrad();

  // A batched BF16 GEMM of `batch` independent M x N x K products (cuBLAS strided batched,
  // priced as a GEMM over batch x its tiles): forward, and in backward the gradients of
  // both inputs, each an activation gradient the previous op waits for (no weight).
  void bmm(const std::string& name, Module mod, double m, double n, double k, double batch);

  // A memory-bound elementwise kernel reading and writing `bytes` in total; backward costs
  // the same traffic again (`bwd_factor` times).
  void memory(const std::string& name, Module mod, double bytes, double bwd_factor = 1.0,
              double saved = 0);

  // Memory-bound kernels of one library call: `fwd` in forward (bytes each, the last
  // saving `saved`), `bwd` its backward (bytes each, recomputed forward kernels included).
  void memory_kernels(const std::string& name, Module mod, const std::vector<double>& fwd,
                      const std::vector<double>& bwd, double saved = 0);

  // The same with each kernel named and, for kernels whose grid stays under one wave,
  // its CTAs (hw_models::ComputeWork::ctas); a kernel with FLOPs is a chunked-recurrence
  // kernel of class `rate` (hw_models::KernelClass::scan or delta_rule: the slower of its
  // bytes and its FLOPs at the family's fitted rate).
  struct MemKernel {
    std::string name;
    double bytes = 0;
    double ctas = 0;
    double flops = 0;
    KernelClass rate = KernelClass::scan;
  };
  // One chunked-recurrence call's kernels (hw_models/chunk_kernels.hpp) over `tokens` in
  // `seqs` sequences, at class `rate`.
  static std::vector<MemKernel> chunk_call(const std::vector<hw_models::ChunkKernel>& kernels,
                                           KernelClass rate, double tokens, double seqs);
  void memory_kernels(const std::string& name, Module mod, const std::vector<MemKernel>& fwd,
                      const std::vector<MemKernel>& bwd, double saved = 0);

  // Quantizes `tensors` tensors of `elems` elements in all into FP8 (see header for the
  // MXFP8 allocation and swizzle kernels that go with it).
  // `tp_reduce`: the input is a sequence-parallel shard gathered quantized after this, so its
  // amax is reduced over TP first (current scaling and NVFP4; see `sp_quantized_grad_gather`).
  void quantize(const std::string& name, Module mod, double elems, double tensors = 1,
                bool norm_amax = false, bool tp_reduce = false);

  // Bytes an element of a quantized tensor takes in a sequence-parallel all-gather, `copies`
  // the copies the quantizer asks for (TE distributed.py gather_along_first_dim with a
  // quantizer @ d0067d0d): per-tensor FP8 (delayed and current scaling) gathers the
  // row-wise data only, its transpose made after the gather where the GEMM needs it
  // (_all_gather_fp8, 989-1080); MXFP8 and NVFP4 gather every requested copy with its
  // block scales (_all_gather_mxfp8 1527-1665, _all_gather_nvfp4 1332-1420).
  double gathered_bytes(double copies) const;

  // Under sequence parallelism a row-parallel FP8 linear's output gradient (the backward of
  // its forward reduce-scatter is an all-gather) is quantized on the rank's own shard and
  // gathered quantized, row- and column-wise (TE module/base.py grad_output_preprocess
  // 1688-1750: gather_along_first_dim with the grad-output quantizer), where moesim's
  // linear() quantizes the gathered gradient after a BF16 gather. This moves the linear's
  // gradient quantization, on 1/tp of the rows, before the gather (the group just pushed)
  // and prices the gather at the quantized bytes.
  void sp_quantized_grad_gather(double tp);
  bool current_scaling() const { return current_scaling_; }

  // `kv_bytes`: K and V of the rank's tokens, which context parallelism's ring passes on
  // every step (forward); backward passes them and their gradients.
  // `window`: the keys a query attends to under sliding-window attention (0: all).
  // `backward` false: a forward-only kernel (DeepSeek-V4's KL-loss teacher and the indexer's
  // gradients, which its fused training path computes in forward); `cls` its class.
  void attention(const std::string& name, Module mod, double fwd_flops, double bytes,
                 double kv_bytes, std::int64_t window = 0, bool backward = true,
                 KernelClass cls = KernelClass::attention_fwd);
  // Under context parallelism's all-to-alls (Parallelism::cp_comm a2a), the attention just
  // built exchanges `in_bytes` of its inputs before it and `out_bytes` of its output after,
  // and the reverse in backward (TE AttnFuncWithCPAndQKVOA2A); nothing otherwise.
  void cp_all_to_all_last(double in_bytes, double out_bytes);
  // A BF16 GEMM-class kernel in forward with nothing to undo in backward.
  void forward_gemm(const std::string& name, Module mod, double m, double n, double k,
                    double batch);

  // Communication that runs in forward and reverses in backward (dispatch <-> combine).
  void comm(const std::string& name, Module mod, CommOp fwd_op, CommOp bwd_op, double bytes,
            bool sync_after = false, bool backward = true);

  // Where a block starts, for its backward's last kernel (`memory_bwd_at`).
  std::size_t bwd_mark() const { return bwd_groups_.size(); }
  // A backward-only memory-bound kernel of `bytes`, launched by autograd's C++ engine, that
  // runs after the backward of everything built since `bwd_mark` (bwd_groups_ reverse at
  // finish): a gradient sum at the fork where the block's input was used twice.
  void memory_bwd_at(std::size_t bwd_mark, const std::string& name, Module mod, double bytes);

  // Several small kernels (router, preprocess) of `bytes` each, forward and backward.
  // Several small kernels (router, preprocess, metadata) of `bytes` each: `count` in
  // forward, `bwd_count` in backward (default the same). The backward kernels of
  // PyTorch's built-in autograd nodes are priced like Python ops: the engine's per-node
  // CPU time (ViewBackward0, about 14 us on x86 under the profiler, an upper bound) is
  // that of a launching op (docs/research/host-microbenchmarks.md 3).
  void small_kernels(const std::string& name, Module mod, int count, double bytes,
                     int bwd_count = -1);

  // The kernels since `mark` are re-run at the start of backward (selective recompute).
  // Each such segment is one of Megatron-Core's checkpoint wrappers, whose own host work
  // (tensor_parallel/random.py at cd4afffa and 24bad8e677) is priced as host ops
  // (host.op_us, a Python-level call, x the host load) beside the kernels it re-runs:
  //   CheckpointFunction (tensor_parallel.checkpoint: core_attn always; mlp, moe, the shared
  //   experts and the full layer in BF16, which under FP8/FP4 run TransformerEngine's
  //   te_checkpoint instead, transformer_layer.py 869-880, moe_layer.py 511-518 and 695-704,
  //   recompute.py 133-142 at 24bad8e677, priced alike), forward 7: the CPU, CUDA and tracker
  //   RNG states saved (3 calls), the autograd Function's apply, no_grad, save_for_backward
  //   (581-621 at cd4afffa: 6), and the graph-safe tracker check (is_graph_safe_cuda_rng_tracker,
  //   517-526 at 24bad8e677), whose is_te_min_version parses a version string on every call
  //   (core/utils.py 326-335: 1); backward 18: the Function.backward entry, the saved tensors,
  //   _fork_rng's three gets and three sets, _set_all_rng_states' three sets, the inputs
  //   detached, enable_grad, the nested torch.autograd.backward and the gradients collected
  //   (624-660: 15), and the tracker check in _fork_rng's get, its set and _set_all_rng_states (3).
  //   CheckpointWithoutOutput, forward 10: as above with its output's storage release and the
  //   gradient hook it registers (678-708, 748-766, 830-: 9) and the tracker check (1); backward
  //   18: the hook, storage sharing and the same 15 and 3. Where its `fp8` flag holds
  //   (`fp8 is not None`, 744 at 24bad8e677) it also enters TransformerEngine's
  //   activation_recompute_forward around the forward (700: +2) and around the re-run (792: +2)
  //   and fp8_autocast around the re-run (795: +2, its deprecation warning looked up on every
  //   call from TE 2.10, transformer_engine/pytorch/quantization.py 957 at d0067d0d, and the
  //   autocast state set and restored), building the default recipe and its string key when
  //   the forward ran outside an FP8 region (740, 714-725: +2). The flag holds for the default
  //   `fp8=False`, in any precision (Checkpoint::without_output: layernorm, transformer_layer.py
  //   619 and 752; moe_act, experts.py 883; DeepSeek-V4's mhc through its
  //   CheckpointWithoutOutputManager, hyper_connection.py 10-45 at d98e8a64), and for
  //   `fp8=config.fp8 or config.fp4` only under FP8/FP4 (Checkpoint::without_output_quantized:
  //   mla_up_proj, multi_latent_attention.py 974-975).
  // Under graph capture the wrappers' host work is the graph's, as every captured op's.
  enum class Checkpoint { function, without_output, without_output_quantized };
  struct CheckpointOps {
    int fwd, bwd;
  };
  static constexpr CheckpointOps kCheckpointFunctionOps{7, 18}, kCheckpointWithoutOutputOps{10, 18};
  // TransformerEngine's recompute and autocast contexts, with and without a recipe given.
  static constexpr CheckpointOps kTeRecomputeContextOps{2, 4};
  static constexpr int kTeDefaultRecipeOps = 2;
  CheckpointOps checkpoint_ops(Checkpoint wrapper) const;
  std::size_t mark() const { return out_.fwd.size(); }
  // `keep_syncs`: the recomputed segment waits on the device again where its forward did
  // (a recomputed dropless MoE layer re-reads its token counts).
  void recompute_since(std::size_t mark, Checkpoint wrapper, bool keep_syncs = false);
  void mark_sync_on_last(int delay = 0) {
    out_.fwd.back().host_sync_after = true;
    out_.fwd.back().host_sync_delay = delay;
  }
  // The last forward op (and its backward) walks `loads` dependent row-map loads
  // (hw_models::ComputeWork::walk_loads: TE's permute before 2.6).
  void walk_last(double loads) {
    out_.fwd.back().work.walk_loads = loads;
    for (auto& k : bwd_groups_.back()) k.work.walk_loads = loads;
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

  // One GEMM kernel of `groups` M x N x K products with inputs of `eb` bytes an element and
  // `ob` bytes of HBM traffic an output element (2: a BF16 output written).
  static KernelTemplate gemm_t(const std::string& name, Module mod, KernelClass cls, Dtype d,
                               double M, double N, double K, double groups, double eb,
                               double ob = 2);
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
  // `userbuffers`: the gather is userbuffers' bulk overlap (KernelTemplate::userbuffers).
  void sp_local_input(double tp, bool userbuffers);

  // Framework::moe_shared_expert_overlap: the forward kernels built since `m` and their
  // backward groups run on the shared expert's stream (KernelTemplate::side_stream), without
  // TE's userbuffers overlap, which Megatron turns off for the shared expert's linears under the
  // overlap (shared_experts.py 163-172 at d98e8a64).
  struct SideMark {
    std::size_t fwd, bwd;
  };
  SideMark side_mark() const { return {out_.fwd.size(), bwd_groups_.size()}; }
  void side_stream_since(SideMark m);

  // The backward in launch order: the recomputed forward kernels, then the groups reversed.
  // A side-stream run that the reversal puts right before a communication kernel moves after
  // it, as in forward: autograd launches that communication's gradient first and the shared
  // expert's gradients on its stream beside it (shared_experts.py: the sequence numbers it
  // sets, "Backward launch order: probs A2A -> tokens A2A -> shared experts fc1"). In each pass
  // the main stream joins the side stream at its first kernel after the last run (the output's
  // get_output in forward, the input gradient's accumulation in backward).
  void finish();

  // TemplateInputs::fused_grouped_mlp, while on: a grouped linear quantizes its input and its
  // output's gradient once for all groups (tex.group_quantize: one call, one kernel; TE
  // d0067d0d ops/fused/grouped_mlp.py _group_quantize_for_grouped_mlp 191-218) and launches
  // each grouped GEMM as one kernel (KernelTemplate::single_launch).
  void set_fused_grouped(bool on) { fused_grouped_ = on; }
  // The last linear's output-gradient quantization is another kernel's epilogue (the fused
  // grouped MLP's dSwiGLU writes fc1's output gradient quantized): it is dropped.
  void drop_last_grad_quant();

  bool fp8() const { return fp8_; }
  bool frozen() const { return frozen_; }  // the base weights do not train (training.lora)

 private:
  // How a precision quantizes: the builder's members of the same names, which the
  // constructor sets from the training precision and a PrecisionScope from a module's.
  struct Quant {
    bool fp8, mx, fp4;
    Dtype dtype;
    bool current_scaling, sp_transpose, blockwise;
  };
  static Quant quant_of(Precision p, bool fp8_tn_only);
  Quant quant() const;
  void set_quant(const Quant& q);

 public:
  // While it lives, the builder quantizes as recipe `p` does (Training::module_precision: a
  // module with a precision of its own); nullopt, or a layer that runs in BF16 (the recipe
  // BF16, or one of Megatron's BF16 first and last layers), changes nothing.
  class PrecisionScope {
   public:
    PrecisionScope(LayerBuilder& b, std::optional<Precision> p);
    ~PrecisionScope();
    PrecisionScope(const PrecisionScope&) = delete;
    PrecisionScope& operator=(const PrecisionScope&) = delete;

   private:
    LayerBuilder& b_;
    Quant saved_;
  };
  bool mxfp8() const { return mx_; }
  bool nvfp4() const { return fp4_; }

 private:
  KernelTemplate mem_t(const std::string& name, Module mod, double bytes) const;
  // BF16 in, FP8 out (+1/32 or 1/128 scales); MXFP8 and NVFP4 write `copies` copies (row-
  // and column-wise; one for a frozen linear under MXFP8), NVFP4 of kNvfp4Bytes an element
  // (see `quantized`).
  KernelTemplate quantize_t(const std::string& name, Module mod, double elems,
                            double copies = 2) const;
  // The transpose of a gathered per-tensor FP8 tensor of `elems` one-byte values (TE
  // Float8TensorStorage._create_transpose: tex.fp8_transpose from Python), read and written.
  KernelTemplate sp_transpose_t(const std::string& name, Module mod, double elems) const;
  // A memory-bound kernel a library API call launches from C++ (TE's quantize).
  KernelTemplate lib_t(const std::string& name, Module mod, double bytes) const;
  // A memory-bound kernel launched from C++ inside a library call, with no API call of its
  // own: TE's create_tensor zero-fills (at::zeros), swizzles and padding, current scaling's
  // amax zero, amax and scale kernels (nvte_* calls inside the quantize).
  KernelTemplate cpp_t(const std::string& name, Module mod, double bytes) const;
  // Current scaling and NVFP4 under sequence parallelism: the quantizer of a column-parallel
  // module's input (forward) and of a row-parallel module's output gradient (backward)
  // reduces its amax over the TP group before the scale and the cast, a c10d all-reduce
  // (MAX) the current stream waits for, called from C++ (TE module/_common.py 20-32
  // set_quantizer_amax_reduction_group; csrc/quantizer.cpp 1008-1027 for FP8 current
  // scaling, 2511-2538 for NVFP4, whose row- and column-wise amaxes go in one coalesced
  // call; docs/research/nvfp4.md 6). Delayed scaling reduces its amaxes once a chunk
  // (schedules/kernel_pricing.hpp), MXFP8's block scales need none. Inserted before the
  // first scale or cast of `q`.
  void insert_tp_amax(std::vector<KernelTemplate>& q, const std::string& name, Module mod) const;
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
                       double elems, int tensors, bool gradient) const;

  // The quantize kernel and, for MXFP8 and NVFP4, what its output tensors need before a GEMM.
  // `norm_amax`: the preceding norm kernel computed the amax (current scaling only);
  // `gradient`: an output gradient (NVFP4 rounds it stochastically).
  // `copies`: MXFP8's row- and column-wise copies (2), or the row-wise one a frozen linear
  // needs (1; see the definition).
  std::vector<KernelTemplate> quantized(const std::string& name, Module mod, double elems,
                                        double tensors, bool norm_amax = false,
                                        bool gradient = false, double copies = 2) const;
  // Every swizzle call (one tensor's, or TE's multi-tensor one) allocates its output
  // scale buffer before its launch (util.cpp swizzle_scaling_factors and
  // multi_tensor_swizzle_scaling_factors: 1 at::empty each; docs/research/te-host-inventory.md).
  // NVFP4's scales go through the same swizzle before cuBLASLt (TE extensions/gemm.cpp, v2.8).
  void swizzles(std::vector<KernelTemplate>& out, const std::string& name, Module mod,
                double scale_bytes, int n) const;
  void push_fwd(KernelTemplate t) { out_.fwd.push_back(std::move(t)); }
  void push_bwd(std::vector<KernelTemplate> b) { bwd_groups_.push_back(std::move(b)); }

  LayerTemplate& out_;
  const StackSwitches& stack_;
  bool fp8_, mx_, fp4_;
  Nvfp4Recipe nvfp4_;
  Dtype dtype_;
  bool current_scaling_;
  std::int64_t cp_;
  bool cp_a2a_;  // context parallelism by all-to-alls (Parallelism::cp_comm)
  bool fp8_attention_;
  std::int64_t seq_;
  bool sp_transpose_;  // per-tensor FP8 on TN-only GEMMs: a gathered tensor is transposed
  bool blockwise_;
  bool fp8_tn_only_;           // TemplateInputs::fp8_tn_only, for a PrecisionScope's per-tensor FP8
  bool param_gather_hooks_;    // Megatron DDP's forward pre-hooks (module_calls_on_last)
  bool frozen_;                // training.lora: base linears without weight gradients
  double wgrad_out_bytes_;     // HBM bytes a weight-gradient element costs (see linear())
  bool attn_bias_, mlp_bias_;  // ModelConfig::attention_bias, mlp_bias (TE Linears with biases)
  double grad_copies_ = 2;     // the last linear's quantized output-gradient copies (MXFP8)
  bool fused_grouped_ = false;  // set_fused_grouped
  std::vector<std::vector<KernelTemplate>> bwd_groups_;
  std::vector<KernelTemplate> recomputed_;
};

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
               bool ub = true, SpInput input = SpInput::bf16, double width = 0);
// After a column-parallel linear on the gathered input, under sequence parallelism
// (LayerBuilder::sp_local_input); `ub` as the tp_gather before it.
void sp_saved_shard(LayerBuilder& b, const Shapes& s, bool ub = true);
// LoRA's adapter on the column-parallel linear just built (training.lora; Megatron-Bridge
// v0.6.0 src/megatron/bridge/peft/lora_layers.py LoRALinear.forward 65-85, utils.py
// ParallelLinearAdapter 896-1252): the adapter reads the linear's (gathered) input x and
// adds (alpha / rank) B(A(x)) to its output shard `out` wide. A is Megatron's own
// ColumnParallelLinear, hidden -> rank / tp, its output gathered over TP (gather_output);
// B the same, rank -> `out`; both BF16 (not TE, so never FP8), training (fprop, dgrad,
// wgrad), A keeping x and B its rank-wide input. Then the scale and the add, elementwise;
// in backward A's input gradient is added into the linear's. Under sequence parallelism
// with TP communication overlap TE's userbuffers keep the gathered input to themselves,
// so the adapter gathers x again (utils.py 1213-1218). Over TP, B's input gradient is
// all-reduced (its column-parallel input's backward), priced as the reduce-scatter of
// the rank-wide tensor (a few hundred KiB: latency-bound either way).
// Nothing unless training.lora names `target`.
void lora_adapter(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Module mod,
                  workload::LoraTarget target, const std::string& name, double out);

// After a row-parallel linear: an FP8 one's output gradient is gathered quantized in
// backward (LayerBuilder::sp_quantized_grad_gather).
void tp_scatter(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name);

// An MLP's activation kernel (TE's swiglu / gelu and their backward), its backward bytes over
// its forward's, with e fc1 outputs per activation output (2 gated, 1 not): forward reads fc1's
// output (e f) and writes f; backward reads the gradient (f) and fc1's output (e f) and writes
// fc1's gradient (e f). (2e + 1) / (e + 1): 5/3 for SwiGLU, 3/2 for GELU
// (docs/research/mlm-moe-recipes.md 6).
constexpr double act_bwd_factor(double e) {
  return (2 * e + 1) / (e + 1);
}

// Megatron's fine-grained activation offloading (--offload-modules): the kernel just
// built keeps what it saves in host memory when its module is offloaded.
void offload(LayerBuilder& b, const workload::Framework& fw, workload::OffloadTarget t);

// Bias-dropout-add, the block's output added to the residual stream (Megatron-Core
// fused_bias_dropout.py _bias_dropout_add_func at d98e8a64: `residual + dropout(x)` on every
// call; with --hidden-dropout 0 torch's dropout returns its input, so the add alone runs).
// With dropout the kernel also writes the one-byte mask and keeps it, and backward reads it
// with the gradient. Backward also pays the fork before the block: the residual stream feeds
// both the block's norm and the skip, so autograd sums the two gradients of the block's
// input (one add, launched by its C++ engine) once the norm's backward has made the second,
// the block's last backward kernel. On the residual stream's (sequence-split) tokens.
// Before 2026-12-06 only the dropout was priced (the add and the sum were missing); later
// that day the sum ran first in the block's backward, where the bda's backward is.
// `block_start`: the builder's bwd_mark() where the block began (its norm), after whose
// backward the sum runs.
void bias_dropout_add(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Module mod,
                      const std::string& name, std::size_t block_start);

// `target`: the offload module the norm's saved input belongs to (none: the final norm).
// `sp_gather`: a column-parallel TE linear gathers the output under sequence parallelism
// (LayerNormLinear's input quantizer reduces its amax over TP; see tp_gather).
void norm(LayerBuilder& b, const Shapes& s, Module mod, const std::string& name, bool fused_quant,
          const workload::Framework& fw, std::optional<workload::OffloadTarget> target,
          bool sp_gather = false);

// The blocks of a decoder layer (layer_graph_attention.cpp, layer_graph_moe.cpp).
// `windowed`: the layer is a sliding-window one (ModelConfig::sliding_window).
void attention_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, bool windowed);
void moe_mlp(LayerBuilder& b, const TemplateInputs& in, const Shapes& s);
// A hybrid model's Mamba-2 mixer layer (layer_graph_mamba.cpp).
void mamba_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s);
// A linear-attention layer's Gated DeltaNet mixer (layer_graph_gdn.cpp).
void gdn_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s);
// DeepSeek-V4 (layer_graph_dsv4.cpp): the attention block of a layer of kind `mixer`
// (window, csa, hca), and mHC before and after each sub-block.
void dsv4_attention_block(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, Mixer mixer);
void mhc_pre(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, const std::string& name,
             Module mod);
void mhc_post(LayerBuilder& b, const TemplateInputs& in, const Shapes& s, const std::string& name,
              Module mod);

}  // namespace moesim::workload::detail
