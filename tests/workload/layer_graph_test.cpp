// Kernel inventories of the layer templates and how the stack switches change them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/load.hpp"
#include "support/helpers.hpp"
#include "workload/layer_graph.hpp"

using namespace moesim;

namespace {

struct Built {
  config::Scenario sc;
  workload::ModelTemplates t;
};

Built build(const std::string& file, void (*tweak)(config::Scenario&) = nullptr) {
  Built b{config::load_scenario_file(test::source_path(file)), {}};
  if (tweak) tweak(b.sc);
  b.t = workload::build_templates({b.sc.model, b.sc.training, b.sc.parallelism, b.sc.framework,
                                   b.sc.stack, b.sc.padded_vocab()});
  return b;
}

std::size_t count(const std::vector<workload::KernelTemplate>& v, const std::string& prefix) {
  return static_cast<std::size_t>(std::count_if(
      v.begin(), v.end(), [&](const auto& k) { return k.name.rfind(prefix, 0) == 0; }));
}

const workload::KernelTemplate& find(const std::vector<workload::KernelTemplate>& v,
                                     const std::string& name) {
  for (const auto& k : v)
    if (k.name == name) return k;
  FAIL("no kernel " << name);
  return v.front();
}

}  // namespace

TEST_CASE("Router kernel counts follow the journey: 72, 31, then 17 with DeepEP",
          "[workload][templates]") {
  // Without DDP's forward pre-hooks (next tests), the router's host calls are the inventory's.
  const auto no_hooks = [](config::Scenario& sc) { sc.framework.overlap_param_gather = false; };
  const auto b1 = build("scenarios/journey/01-baseline.json", no_hooks);
  const auto b3 = build("scenarios/journey/03-router-fusion.json", no_hooks);
  const auto b4 = build("scenarios/journey/04-deepep.json", no_hooks);
  CHECK(count(b1.t.moe.fwd, "moe.router") == 72);
  CHECK(count(b3.t.moe.fwd, "moe.router") == 31);
  // DeepEP: router + EP preprocess = 17.
  CHECK(count(b4.t.moe.fwd, "moe.router") + count(b4.t.moe.fwd, "moe.preprocess") == 17);
  // Host-only torch calls counted in Megatron-Core's router + preprocess (research notes).
  CHECK(find(b1.t.moe.fwd, "moe.router.fprop").host_ops == 52);
  CHECK(find(b3.t.moe.fwd, "moe.router.fprop").host_ops == 48);
  CHECK(find(b4.t.moe.fwd, "moe.router.fprop").host_ops == 26);
  // Backward: about 32 router GPU ops unfused, 14 fused, each
  // count including the router GEMM's dgrad and wgrad.
  CHECK(count(b1.t.moe.bwd, "moe.router") == 32);
  CHECK(count(b3.t.moe.bwd, "moe.router") == 14);
  // The NCCL path has the explicit global permute, DeepEP does not.
  CHECK(count(b3.t.moe.fwd, "moe.global_permute") == 1);
  CHECK(count(b4.t.moe.fwd, "moe.global_permute") == 0);
}

// Unfused, the router runs one eager op per routing step: DeepSeek-V3's sigmoid, expert
// bias, group-limited top-k and scaling cost 22 forward ops and 16 backward ops more than
// Qwen3's softmax over a plain top-k (docs/research/router-host-inventory.md 2.1 and 4,
// Megatron-Core moe_utils.py topk_softmax_with_capacity at 6a6cd47). Fused, the same.
TEST_CASE("The unfused router's op count follows the routing method", "[workload][templates]") {
  const auto qwen = build("scenarios/pai/p2-tp2pp8.json");  // softmax, no groups, alltoall, unfused
  CHECK(qwen.sc.model.router_scoring == "softmax");
  CHECK(count(qwen.t.moe.fwd, "moe.router") == 72 - 11 - 11);
  CHECK(count(qwen.t.moe.bwd, "moe.router") == 32 - 16);
  const auto fused = build("scenarios/pai/p2-tp2pp8.json",
                           [](config::Scenario& sc) { sc.stack.router_fusion = true; });
  CHECK(count(fused.t.moe.fwd, "moe.router") == 31);
  CHECK(count(fused.t.moe.bwd, "moe.router") == 14);
  // Groups without sigmoid (DeepSeek-V2's softmax with group-limited top-k): 11 fewer.
  const auto grouped = build("scenarios/pai/p2-tp2pp8.json", [](config::Scenario& sc) {
    sc.model.router_groups = 8;
    sc.model.router_topk_groups = 4;
  });
  CHECK(count(grouped.t.moe.fwd, "moe.router") == 72 - 11);
  CHECK(count(grouped.t.moe.bwd, "moe.router") == 32 - 16);
}

namespace {
int host_ops(const std::vector<workload::KernelTemplate>& v) {
  int n = 0;
  for (const auto& k : v) n += k.host_ops;
  return n;
}
}  // namespace

// Megatron-Core's DDP with --overlap-param-gather puts a forward pre-hook on every module:
// two host ops a module call, one a parameter the hook walks. A Qwen3-235B MoE layer at
// TP1 EP8 (16 local experts), by hand:
//   attention: TransformerLayer, SelfAttention, two IdentityOps (4 calls, 8); the input
//     norm (its IdentityOp and the fused weight: 3); linear_qkv (3); q_layernorm and
//     k_layernorm (3 each); core attention and TE's backend module (4); linear_proj (3): 27
//   MoE: pre_mlp_layernorm (3); MoELayer (2); the router (3); TEGroupedMLP (2); linear_fc1
//     and linear_fc2, 16 weights each (18 each): 46
// 73 a forward; backward calls no forward hook, but full recompute calls every module again.
TEST_CASE("DDP's parameter-gather hooks: host ops per module call and parameter",
          "[workload][templates]") {
  // PAI's P5 runs without the overlap (its row does not name it): turned on here.
  const auto with_overlap = [](config::Scenario& sc) {
    sc.framework.overlap_grad_reduce = sc.framework.overlap_param_gather = true;
  };
  const auto off = [](config::Scenario& sc) { sc.framework.overlap_param_gather = false; };
  const auto on = build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json", with_overlap);
  const auto without = build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json", off);
  REQUIRE(on.sc.framework.overlap_param_gather);
  CHECK(on.sc.parallelism.ep == 8);
  CHECK(host_ops(on.t.moe.fwd) - host_ops(without.t.moe.fwd) == 73);
  CHECK(host_ops(on.t.moe.bwd) - host_ops(without.t.moe.bwd) == 73);  // the recomputed forward
  // Qwen3's q and k norms are kernels of their own.
  CHECK(count(on.t.moe.fwd, "attn.q_norm") == 1);
  CHECK(count(on.t.moe.fwd, "attn.k_norm") == 1);
  // Under FSDP, no DDP hooks.
  const auto fsdp_on =
      build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json", [](config::Scenario& sc) {
        sc.framework.overlap_grad_reduce = sc.framework.overlap_param_gather = true;
        sc.parallelism.fsdp = true;
      });
  REQUIRE(fsdp_on.sc.framework.overlap_param_gather);
  const auto fsdp_off =
      build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json", [](config::Scenario& sc) {
        sc.parallelism.fsdp = true;
        sc.framework.overlap_param_gather = false;
      });
  CHECK(host_ops(fsdp_on.t.moe.fwd) == host_ops(fsdp_off.t.moe.fwd));
}

TEST_CASE("Dropless MoE syncs the host once per layer in forward", "[workload][templates]") {
  const auto b = build("scenarios/journey/04-deepep.json");
  const auto syncs = std::count_if(b.t.moe.fwd.begin(), b.t.moe.fwd.end(),
                                   [](const auto& k) { return k.host_sync_after; });
  CHECK(syncs == 1);
  // DeepEP: the host waits for notify_dispatch's counts, then launches the data dispatch.
  CHECK(find(b.t.moe.fwd, "moe.dispatch_notify.fwd").host_sync_after);
  CHECK_FALSE(find(b.t.moe.fwd, "moe.dispatch.fwd").host_sync_after);
  // AlltoAll: counts after the preprocess, the host blocks one launch later (after the
  // global permute, before the all-to-all).
  const auto a = build("scenarios/journey/03-router-fusion.json");
  CHECK(find(a.t.moe.fwd, "moe.preprocess.1.fwd").host_sync_after);
  CHECK(find(a.t.moe.fwd, "moe.preprocess.1.fwd").host_sync_delay == 1);
  // HybridEP (dispatch_with_permute): two blocking copies to the host, the received
  // count after its metadata scan and the tokens per expert after dispatch + permute
  // processing, so the routed experts launch only once the dispatch has finished.
  const auto h = build("scenarios/journey/11-hybridep.json");
  CHECK(find(h.t.moe.fwd, "moe.hybridep_meta.2.fwd").host_sync_after);
  CHECK(find(h.t.moe.fwd, "moe.hybridep_meta.2.fwd").host_sync_delay == 0);
  CHECK(find(h.t.moe.fwd, "moe.permute_processing.0.fwd").host_sync_after);
  CHECK(std::count_if(h.t.moe.fwd.begin(), h.t.moe.fwd.end(),
                      [](const auto& k) { return k.host_sync_after; }) == 2);
  CHECK(std::none_of(b.t.moe.bwd.begin(), b.t.moe.bwd.end(),
                     [](const auto& k) { return k.host_sync_after; }));
}

TEST_CASE("MXFP8 allocation, swizzle and PDL switches", "[workload][templates]") {
  // Baseline: per quantized tensor 4 host allocations and 2 zero-fill kernels; per tensor a
  // swizzle and a padding kernel. fc1's input is 8 tensors (EP32: 256 / 32 local experts).
  const auto b1 = build("scenarios/journey/01-baseline.json");
  CHECK(count(b1.t.moe.fwd, "moe.fc1.quant.scale_zeros") == 16);
  CHECK(find(b1.t.moe.fwd, "moe.fc1.quant.scale_zeros").host_allocs == 32);
  CHECK(count(b1.t.moe.fwd, "moe.fc1.quant.swizzle_pad") == 8);
  CHECK(count(b1.t.moe.fwd, "moe.fc1.quant.swizzle") == 16);  // 8 swizzle + 8 swizzle_pad
  CHECK_FALSE(find(b1.t.moe.fwd, "moe.fc1.quant").pdl);
  // The fills and swizzles run inside TE's calls (no API call of their own); the quantize
  // is the API call.
  CHECK(find(b1.t.moe.fwd, "moe.fc1.quant.scale_zeros").cpp_launch);
  CHECK(find(b1.t.moe.fwd, "moe.fc1.quant.swizzle").cpp_launch);
  CHECK_FALSE(find(b1.t.moe.fwd, "moe.fc1.quant.swizzle").library_launch);
  CHECK(find(b1.t.moe.fwd, "moe.fc1.quant.swizzle").host_allocs == 1);  // its output buffer
  CHECK(find(b1.t.moe.fwd, "moe.fc1.quant").library_launch);
  CHECK_FALSE(find(b1.t.moe.fwd, "moe.fc1.quant").cpp_launch);
  // Step 2 pre-allocates: no allocations, no fills.
  const auto b2 = build("scenarios/journey/02-mxfp8-alloc-permute.json");
  CHECK(count(b2.t.moe.fwd, "moe.fc1.quant.scale_zeros") == 0);
  // Step 9: one fused swizzle per GEMM and PDL quantize kernels.
  const auto b9 = build("scenarios/journey/09-pdl-swizzle.json");
  CHECK(count(b9.t.moe.fwd, "moe.fc1.quant.swizzle") == 1);
  CHECK(find(b9.t.moe.fwd, "moe.fc1.quant").pdl);
  // Step 13 fuses the norm's quantize into the norm.
  const auto exact = [](const std::vector<workload::KernelTemplate>& v, const std::string& n) {
    return std::count_if(v.begin(), v.end(), [&](const auto& k) { return k.name == n; });
  };
  CHECK(exact(build("scenarios/journey/12-te-host-slim.json").t.moe.fwd, "moe.norm.quant") == 1);
  CHECK(exact(build("scenarios/journey/13-norm-quant-fusion.json").t.moe.fwd, "moe.norm.quant") ==
        0);
}

// TE's permute before 2.6 walks all E row-map entries per token and hidden block of 1,024
// (hw_models::ComputeWork::walk_loads); the chunk sort after the all-to-all walks none.
// DeepSeek-V3 (journey step 1, alltoall, 4,096 tokens a rank): 4096 x 256 x 7 loads.
TEST_CASE("The old permute kernel walks every expert's row-map entry", "[workload][templates]") {
  const auto b1 = build("scenarios/journey/01-baseline.json");
  const auto b2 = build("scenarios/journey/02-mxfp8-alloc-permute.json");
  const double dsv3 = 4096.0 * 256 * 7;
  CHECK(find(b1.t.moe.fwd, "moe.global_permute.fwd").work.walk_loads == dsv3);
  CHECK(find(b1.t.moe.bwd, "moe.global_permute.bwd").work.walk_loads == dsv3);
  CHECK(find(b1.t.moe.fwd, "moe.unpermute.fwd").work.walk_loads == dsv3);
  CHECK(find(b1.t.moe.fwd, "moe.local_permute.fwd").work.walk_loads == 0);
  CHECK(find(b2.t.moe.fwd, "moe.global_permute.fwd").work.walk_loads == 0);
}

// Qwen3-235B (PAI P5: MBS 4, TP1, 16,384 tokens a rank; 128 experts, 4,096 wide: 4 blocks).
// A flex dispatcher permutes what it received, once per destination rank, over the local
// experts: Mixtral-8x22B at EP8 (one expert a rank, top-2) receives D = 8 (1 - 7/8 x 6/7)
// = 2 rows a token and walks 1 expert each.
TEST_CASE("The old permute's walk follows its tokens and the experts in its map",
          "[workload][templates]") {
  const auto p5 = build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json");  // 25.04: before TE 2.6
  CHECK(find(p5.t.moe.fwd, "moe.global_permute.fwd").work.walk_loads == 16384.0 * 128 * 4);
  const auto mixtral =
      build("scenarios/measured/c3-mixtral-8x22b-h100.json", [](config::Scenario& sc) {
        sc.stack.permute_fusion_v2 = false;
        sc.framework.dispatcher = hw_models::Dispatcher::deepep;
      });
  const double tokens = 4096.0 / 2;  // MBS 1, seq 4096, TP2 with sequence parallelism
  CHECK(find(mixtral.t.moe.fwd, "moe.permute.fwd").work.walk_loads ==
        Approx(tokens * 2 * 1 * 6));  // 6,144 wide: 6 blocks
  const auto fused = build("scenarios/measured/c3-mixtral-8x22b-h100.json");
  CHECK(find(fused.t.moe.fwd, "moe.global_permute.fwd").work.walk_loads == 0);
  // allgather permutes the EP group's gathered tokens over its local experts: 16,384 x 8
  // rows, 16 experts; HybridEP permutes in its own kernels, not TE's: no walk.
  const auto gathered = build(
      "scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json",
      [](config::Scenario& sc) { sc.framework.dispatcher = hw_models::Dispatcher::allgather; });
  CHECK(find(gathered.t.moe.fwd, "moe.global_permute.fwd").work.walk_loads == 16384.0 * 8 * 16 * 4);
  const auto hybrid = build(
      "scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json",
      [](config::Scenario& sc) { sc.framework.dispatcher = hw_models::Dispatcher::hybridep; });
  CHECK(find(hybrid.t.moe.fwd, "moe.permute.fwd").work.walk_loads == 0);
  CHECK(find(hybrid.t.moe.fwd, "moe.unpermute.fwd").work.walk_loads == 0);
}

// Gradient-accumulation fusion: TE writes each weight gradient into weight.main_grad with
// accumulate, so the wgrad GEMM's output costs the main gradient's bytes read and written
// (8 in FP32, 4 in BF16), where fprop and dgrad write 2 (BF16). PAI's P7: Qwen3-235B at EP8,
// 4,096 tokens top-8 over 16 local experts, 2,048 tokens an expert.
TEST_CASE("A weight gradient reads and writes the main gradient", "[workload][templates]") {
  const auto fp32 = build("scenarios/pai/p7-tp1pp32vpp3-moe.json");
  const double E = 16, m = 2048, h = 4096, f = 1536;
  const auto& fc2 = find(fp32.t.moe.bwd, "moe.fc2.wgrad");
  CHECK(fc2.work.bytes == Approx(E * (f * m * 2 + m * h * 2 + f * h * 8)));
  CHECK(find(fp32.t.moe.bwd, "moe.fc2.dgrad").work.bytes ==
        Approx(E * (m * h * 2 + h * f * 2 + m * f * 2)));
  const auto bf16 = build("scenarios/pai/p7-tp1pp32vpp3-moe.json", [](config::Scenario& sc) {
    sc.framework.main_grads_dtype = workload::GradDtype::bf16;
  });
  CHECK(find(bf16.t.moe.bwd, "moe.fc2.wgrad").work.bytes ==
        Approx(E * (f * m * 2 + m * h * 2 + f * h * 4)));
}

TEST_CASE("Recompute re-runs the named modules at the start of backward", "[workload][templates]") {
  const auto b1 = build("scenarios/journey/01-baseline.json");          // mlp + mla_up_proj
  const auto b5 = build("scenarios/journey/05-no-mla-recompute.json");  // mlp + moe_act
  CHECK(find(b1.t.moe.bwd, "attn.q_b.fprop.recompute").recompute);
  CHECK(count(b5.t.moe.bwd, "attn.q_b.fprop.recompute") == 0);
  CHECK(find(b5.t.moe.bwd, "moe.act.fwd.recompute").recompute);
  CHECK(find(b1.t.dense.bwd, "mlp.fc1.fprop.recompute").recompute);
  // Backward of every GEMM: dgrad and wgrad.
  CHECK(count(b5.t.moe.bwd, "moe.fc1.dgrad") == 1);
  CHECK(count(b5.t.moe.bwd, "moe.fc1.wgrad") == 1);
}

TEST_CASE("Sync-free HybridEP and token dropping remove the device-host sync",
          "[workload][templates]") {
  const auto has_sync = [](const workload::ModelTemplates& t) {
    return std::any_of(t.moe.fwd.begin(), t.moe.fwd.end(),
                       [](const auto& k) { return k.host_sync_after; });
  };
  CHECK(has_sync(build("scenarios/journey/13-norm-quant-fusion.json").t));
  CHECK_FALSE(has_sync(build("scenarios/whatif/sync-free.json").t));
  const auto drop = build("scenarios/journey/04-deepep.json",
                          [](config::Scenario& sc) { sc.training.capacity_factor = 1.0; });
  CHECK_FALSE(has_sync(drop.t));
}

TEST_CASE("HybridEP copies out of and into its registered buffer unless fused with permute",
          "[workload][templates]") {
  // Fused (step 11): the permute kernel carries the copy and padding; no copy kernels.
  const auto fused = build("scenarios/journey/11-hybridep.json");
  CHECK(count(fused.t.moe.fwd, "moe.permute.fwd") == 1);
  CHECK(count(fused.t.moe.fwd, "moe.dispatch_copy") == 0);
  const auto unfused = build("scenarios/journey/11-hybridep.json", [](config::Scenario& sc) {
    sc.stack.hybridep_permute_fusion = false;
  });
  CHECK(count(unfused.t.moe.fwd, "moe.dispatch_copy") == 1);
  CHECK(count(unfused.t.moe.fwd, "moe.combine_copy") == 1);
  // The copy moves every received token twice (read + write): T x top-k x hidden x 2 B x 2.
  CHECK(find(unfused.t.moe.fwd, "moe.dispatch_copy.fwd").work.bytes ==
        Approx(4096.0 * 8 * 7168 * 2 * 2));
  // DeepEP receives into an ordinary tensor: a permute, no copy.
  CHECK(count(build("scenarios/journey/04-deepep.json").t.moe.fwd, "moe.dispatch_copy") == 0);
}

TEST_CASE("MLA runs Megatron's two fused RoPE kernels", "[workload][templates]") {
  const auto b = build("scenarios/journey/13-norm-quant-fusion.json");
  // q: T x heads x 192 read and written; kv: k_nope + v (T x 128 x 256) and k_pe (T x 64)
  // read, k (T x 128 x 192) and v (T x 128 x 128) written, BF16.
  const double T = 4096, n = 128;
  CHECK(find(b.t.moe.fwd, "attn.rope_q.fwd").work.bytes == Approx(T * n * 192 * 2 * 2));
  CHECK(find(b.t.moe.fwd, "attn.rope_kv.fwd").work.bytes ==
        Approx(T * (n * 256 + 64) * 2 + T * n * 320 * 2));
  CHECK(find(b.t.moe.bwd, "attn.rope_kv.bwd").work.bytes ==
        Approx(find(b.t.moe.fwd, "attn.rope_kv.fwd").work.bytes));
}

// apply_rope_fusion off: the unfused RoPE on q's 64 rotary dimensions and the shared k_pe,
// then the concatenations that rebuild q and k and value made contiguous
// (multi_latent_attention.py 895-957 at d0b3b775).
TEST_CASE("MLA without RoPE fusion runs the unfused path's kernels", "[workload][templates]") {
  const auto b = build("scenarios/journey/13-norm-quant-fusion.json",
                       [](config::Scenario& sc) { sc.framework.rope_fusion = false; });
  CHECK(count(b.t.moe.fwd, "attn.rope_q") == 0);
  // 7 + 7: the de-interleave and the rotation's six, for q_pe and k_pe; 3 copies.
  CHECK(count(b.t.moe.fwd, "attn.rope.") == 17);
  // 10 + 10: the rotation's five and the de-interleave's five; the splits' and expand's 3.
  CHECK(count(b.t.moe.bwd, "attn.rope.") == 23);
  const double T = 4096, n = 128, q = T * n * 192 * 2, qpe = T * n * 64 * 2, kpe = T * 64 * 2;
  double fwd = 0, bwd = 0;
  for (const auto& k : b.t.moe.fwd)
    if (k.name.starts_with("attn.rope.") && !k.recompute) fwd += k.work.bytes;
  for (const auto& k : b.t.moe.bwd)
    if (k.name.starts_with("attn.rope.")) bwd += k.work.bytes;
  // De-interleave and rotation: 2 + 12 x forward, 10 + 7 x backward; q and k rebuilt (2 q
  // each), v copied (T n 128 2 x 2); backward: q's and kv's split gradients concatenated, the
  // expand's sum over heads.
  CHECK(fwd == Approx(14 * (qpe + kpe) + 4 * q + 2 * T * n * 128 * 2));
  CHECK(bwd == Approx(17 * (qpe + kpe) + 2 * q + 2 * T * n * 256 * 2 + qpe + kpe));
}

TEST_CASE("One capture set decides what CUDA graphs hold", "[workload][templates][graphs]") {
  using workload::Module;
  const auto s6 = build("scenarios/journey/06-partial-cuda-graphs.json").sc;
  const workload::CaptureSet c6(s6.framework, s6.stack);
  CHECK(c6[Module::attn]);
  CHECK(c6[Module::moe_router]);
  CHECK(c6[Module::moe_preprocess]);
  CHECK_FALSE(c6[Module::shared_expert]);  // step 10 adds it
  CHECK_FALSE(c6[Module::experts]);
  const auto s10 = build("scenarios/journey/10-graph-shared-expert.json").sc;
  CHECK(workload::CaptureSet(s10.framework, s10.stack)[Module::shared_expert]);
  const auto full = build("scenarios/whatif/sync-free-full-graph.json").sc;
  const workload::CaptureSet cf(full.framework, full.stack);
  CHECK(cf.full_iteration());
  CHECK(cf[Module::experts]);
  CHECK(cf[Module::moe_dispatch]);
  const auto s1 = build("scenarios/journey/01-baseline.json").sc;
  CHECK_FALSE(workload::CaptureSet(s1.framework, s1.stack)[Module::attn]);
}

TEST_CASE("FP8 dispatch halves the forward dispatch; combine and backward stay BF16",
          "[workload][templates]") {
  const auto bf16 = build("scenarios/journey/11-hybridep.json");
  const auto fp8 = build("scenarios/journey/11-hybridep.json",
                         [](config::Scenario& sc) { sc.framework.ep_fp8_dispatch = true; });
  // T x top-k x hidden x (1 + 4/128) bytes against x 2.
  CHECK(find(bf16.t.moe.fwd, "moe.dispatch.fwd").comm_bytes == Approx(4096.0 * 8 * 7168 * 2));
  CHECK(find(fp8.t.moe.fwd, "moe.dispatch.fwd").comm_bytes == Approx(4096.0 * 8 * 7168 * 1.03125));
  CHECK(find(fp8.t.moe.fwd, "moe.dispatch.fwd").comm_element_bytes == Approx(1.03125));
  CHECK(find(fp8.t.moe.bwd, "moe.dispatch.bwd").comm_bytes == Approx(4096.0 * 8 * 7168 * 2));
  CHECK(find(fp8.t.moe.fwd, "moe.combine.fwd").comm_bytes == Approx(4096.0 * 8 * 7168 * 2));
}

TEST_CASE("Saved activations: one tensor saved once, and DeepSeek's low-precision caches",
          "[workload][templates][memory]") {
  // The production scenario (TP1, 4096 tokens, FP8 blockwise, MLA up-projection recomputed)
  // without and with its caches; per MLA layer n = 128 heads, v = 128.
  const auto plain = build("scenarios/h800/dsv3-production.json", [](config::Scenario& sc) {
    sc.framework.low_precision_activations.clear();
  });
  const auto cached = build("scenarios/h800/dsv3-production.json");
  const double T = 4096, n = 128, v = 128;
  // Core attention keeps o (BF16) and the log-sum-exp; FP8 o_proj keeps its own FP8 copy.
  CHECK(find(plain.t.moe.fwd, "attn.core.fwd").saved_bytes == Approx(T * n * v * 2 + T * n * 4));
  CHECK(find(plain.t.moe.fwd, "attn.o_proj.fprop").saved_bytes == Approx(T * n * v * 1));
  // attn_output: one E5M6 copy (1.5 bytes) for both.
  CHECK(find(cached.t.moe.fwd, "attn.core.fwd").saved_bytes == Approx(T * n * v * 1.5 + T * n * 4));
  CHECK(find(cached.t.moe.fwd, "attn.o_proj.fprop").saved_bytes == 0);
  // swiglu_input: the routed experts' 2 x 2048 SwiGLU inputs of T x 8 copies in FP8 with
  // a 4-byte scale per 128 values, against BF16.
  CHECK(find(plain.t.moe.fwd, "moe.act.fwd").saved_bytes == Approx(T * 8 * 2 * 2048 * 2));
  CHECK(find(cached.t.moe.fwd, "moe.act.fwd").saved_bytes ==
        Approx(T * 8 * 2 * 2048 * (1 + 4.0 / 128)));
  CHECK(find(cached.t.moe.fwd, "shared.act.fwd").saved_bytes ==
        Approx(T * 2 * 2048 * (1 + 4.0 / 128)));
  // FP8 linears quantize their input each: kv_a and shared fc1 keep their own copies.
  CHECK(find(plain.t.moe.fwd, "attn.kv_a.fprop").saved_bytes == Approx(T * 7168));
  CHECK(find(plain.t.moe.fwd, "shared.fc1.fprop").saved_bytes == Approx(T * 7168));
  // BF16: q_a and kv_a save the one normed input, the router and the shared expert's fc1
  // the one pre-MLP norm output, core attention and o_proj the one output.
  const auto bf16 = build("scenarios/h800/dsv3-production.json", [](config::Scenario& sc) {
    sc.training.precision = workload::Precision::bf16;
    sc.framework.low_precision_activations.clear();
  });
  CHECK(find(bf16.t.moe.fwd, "attn.q_a.fprop").saved_bytes == Approx(T * 7168 * 2));
  CHECK(find(bf16.t.moe.fwd, "attn.kv_a.fprop").saved_bytes == 0);
  CHECK(find(bf16.t.moe.fwd, "moe.router.fprop").saved_bytes == Approx(T * 7168 * 2));
  CHECK(find(bf16.t.moe.fwd, "shared.fc1.fprop").saved_bytes == 0);
  CHECK(find(bf16.t.moe.fwd, "attn.o_proj.fprop").saved_bytes == 0);
}

TEST_CASE("An activation's backward moves 5/3 of its forward bytes gated, 3/2 not",
          "[workload][templates]") {
  // SwiGLU: forward reads fc1's 2f and writes f; backward reads the gradient (f) and fc1's
  // output (2f) and writes fc1's gradient (2f). GELU: f and f forward, f + f and f backward.
  const auto gated = build("scenarios/h800/dsv3-production.json");
  for (const char* k : {"moe.act", "shared.act"}) {
    INFO(k);
    const double fwd = find(gated.t.moe.fwd, std::string(k) + ".fwd").work.bytes;
    CHECK(find(gated.t.moe.bwd, std::string(k) + ".bwd").work.bytes == Approx(fwd * 5 / 3));
  }
  const auto gelu = build("scenarios/h800/dsv3-production.json",
                          [](config::Scenario& sc) { sc.model.gated_linear_unit = false; });
  const double fwd = find(gelu.t.moe.fwd, "moe.act.fwd").work.bytes;
  CHECK(fwd == Approx(4096.0 * 8 * 2048 * 2 * 2));  // T x top-k rows, f in and f out, BF16
  CHECK(find(gelu.t.moe.bwd, "moe.act.bwd").work.bytes == Approx(fwd * 3 / 2));
}

TEST_CASE(
    "An MTP module: embedding, two norms, the 2h->h projection, a decoder layer, the shared head",
    "[workload][templates]") {
  const auto b = build("scenarios/h800/dsv3-production.json");
  const auto& mtp = b.t.mtp;
  const auto& proj = find(mtp.fwd, "mtp.eh_proj.fprop");
  CHECK(proj.work.m == 4096);
  CHECK(proj.work.n == 7168);
  CHECK(proj.work.k == 2 * 7168);
  // DeepSeek-V3's last layer is MoE: the module's layer is a whole MoE layer, and the head
  // runs once more (its logits are in Megatron's FLOPs: 6 h V (M + 1)).
  CHECK(count(mtp.fwd, "moe.fc1.fprop") == 1);
  CHECK(count(mtp.fwd, "head.output.fprop") == 1);
  CHECK(mtp.fwd.size() == b.t.moe.fwd.size() + b.t.head.fwd.size() + count(mtp.fwd, "mtp."));
  // Backward runs the head's first and the projection's last.
  CHECK(mtp.bwd.front().name == "loss.cross_entropy.bwd");
  CHECK(mtp.bwd.back().name.rfind("mtp.", 0) == 0);
  CHECK(mtp.bwd.size() == b.t.moe.bwd.size() + b.t.head.bwd.size() + count(mtp.bwd, "mtp."));
}

// Megatron-Core routes each rank's own sequence-parallel tokens (num_local_tokens): at TP2
// with ETP1 the router and the routed experts see S/2 tokens, and only the TP-sharded shared
// expert gathers the sequence. DeepSeek-V3, seq 4096, MBS 1: the router GEMM's M is 2048;
// the expert fc1's FLOPs are 2 x (2048 x 8 routed copies) x (2 x 2048) x 7168 over the 8
// local experts of EP32 (balanced), which the grouped GEMM's total counts once.
TEST_CASE("TP with ETP 1: the router and the experts see the rank's own tokens",
          "[workload][templates]") {
  const auto tp2 = build("scenarios/journey/13-norm-quant-fusion.json", [](config::Scenario& sc) {
    sc.parallelism.tp = 2;
    sc.parallelism.sequence_parallel = true;
  });
  const auto& router = find(tp2.t.moe.fwd, "moe.router.fprop");
  CHECK(router.work.m == 2048);
  const auto& fc1 = find(tp2.t.moe.fwd, "moe.fc1.fprop");
  CHECK(fc1.work.flops == Approx(2.0 * 2048 * 8 * 2 * 2048 * 7168));
  CHECK(count(tp2.t.moe.fwd, "shared.sp_gather") == 1);
  CHECK(count(tp2.t.moe.fwd, "shared.sp_scatter") == 1);
  CHECK(count(tp2.t.moe.fwd, "moe.sp_gather") == 0);
  CHECK(count(tp2.t.moe.fwd, "moe.etp_gather") == 0);
  // ETP = TP = 2: the received tokens are gathered over the expert-TP group and every rank
  // runs half of each expert's FFN on twice the tokens: the same FLOPs per rank.
  const auto etp2 = build("scenarios/journey/13-norm-quant-fusion.json", [](config::Scenario& sc) {
    sc.parallelism.tp = 2;
    sc.parallelism.etp = 2;
    sc.parallelism.sequence_parallel = true;
  });
  CHECK(count(etp2.t.moe.fwd, "moe.etp_gather") == 1);
  CHECK(count(etp2.t.moe.fwd, "moe.etp_scatter") == 1);
  CHECK(find(etp2.t.moe.fwd, "moe.fc1.fprop").work.flops == Approx(fc1.work.flops));
  CHECK(find(etp2.t.moe.fwd, "moe.fc1.fprop").work.m == 2 * fc1.work.m);
}

// Context parallelism's ring attention passes K and V of the rank's S/CP tokens every step:
// DeepSeek-V3 (MLA, 128 heads, K 192 and V 128 per head after the up-projection), seq 4096,
// CP2: 2048 x 128 x (192 + 128) x 2 bytes = 167,772,160; backward passes their gradients too.
TEST_CASE("CP ring attention: the KV bytes a rank passes per step", "[workload][templates]") {
  const auto cp2 = build("scenarios/journey/13-norm-quant-fusion.json",
                         [](config::Scenario& sc) { sc.parallelism.cp = 2; });
  CHECK(find(cp2.t.moe.fwd, "attn.core.fwd").cp_ring_bytes == Approx(167772160.0));
  CHECK(find(cp2.t.moe.bwd, "attn.core.bwd").cp_ring_bytes == Approx(2 * 167772160.0));
  const auto cp1 = build("scenarios/journey/13-norm-quant-fusion.json");
  CHECK(find(cp1.t.moe.fwd, "attn.core.fwd").cp_ring_bytes == 0);
}

// Megatron's --fp8-recipe tensorwise is TransformerEngine's per-tensor current scaling
// (TE v2.11 Float8CurrentScalingQuantizer::quantize): every cast comes after a one-thread
// amax zero-fill, an amax pass over its BF16 input (unless the norm before it computed the
// amax) and a one-thread scale kernel, and allocates data, transpose and scale_inv; a
// grouped GEMM's splits are quantized one by one. DeepSeek's blockwise scales need none.
TEST_CASE("FP8 current scaling: amax, scale and cast kernels per tensor", "[workload][templates]") {
  const auto tensorwise = build("scenarios/h800/dsv3-production.json", [](config::Scenario& sc) {
    sc.training.precision = workload::Precision::fp8_tensorwise;
  });
  const auto blockwise = build("scenarios/h800/dsv3-production.json");
  const auto ends = [](const std::string& s, std::string_view e) { return s.ends_with(e); };
  std::size_t zero = 0, amax = 0, scale = 0, casts = 0, after_norm = 0, fc1_casts = 0;
  for (const auto& k : tensorwise.t.moe.fwd) {
    if (ends(k.name, ".amax_zero")) ++zero;
    if (ends(k.name, ".amax")) {
      ++amax;
      CHECK(k.cpp_launch);  // from inside the quantize call, no API call of its own
      CHECK_FALSE(k.library_launch);
    }
    if (ends(k.name, ".scale")) ++scale;
    if (k.work.cls == hw_models::KernelClass::quantize) {
      ++casts;
      CHECK(k.host_allocs == 3);
      CHECK(k.host_ops == 1);
      if (k.name.find("norm.quant") != std::string::npos) ++after_norm;
      if (k.name == "moe.fc1.quant") ++fc1_casts;
    }
  }
  CHECK(casts > 0);
  CHECK(zero == casts);
  CHECK(scale == casts);
  CHECK(after_norm == 2);  // norm_quant_fusion: the attention and MoE norms compute the amax
  CHECK(amax == casts - after_norm);
  CHECK(fc1_casts == 256 / 64);  // one cast per local expert (256 experts over EP64)
  for (const auto& k : blockwise.t.moe.fwd) CHECK(k.name.find(".amax") == std::string::npos);
}

// NVFP4 (TE NVFP4BlockScaling): per quantized tensor a zeroed amax, one read of the BF16
// input for it and one cast writing both copies (0.5 B + an E4M3 scale per 16, twice); the
// column-wise Hadamard cast on its own before TE 2.15; stochastic rounding slows the
// gradients' casts (TE #2412: both copies 6.4 / 4.5, row-wise alone 7.2 / 7.0); a one-thread
// alpha kernel before every FP4 GEMM; a grouped GEMM's splits share the amax and, with the
// transform, the cast.
TEST_CASE("NVFP4: amax, cast and alpha kernels; FP4 GEMMs; half-byte saved inputs",
          "[workload][templates]") {
  const auto vanilla =
      build("scenarios/series/mlperf-llama405b-gb200-nvfp4-00512.json");  // MLPerf: no RHT, no SR
  const auto te =
      build("scenarios/series/mlperf-llama405b-gb200-nvfp4-00512.json", [](config::Scenario& sc) {
        sc.training.nvfp4 = {true, true};
        sc.stack.nvfp4_rht_fusion = false;  // TE 2.8-2.14
      });
  const auto& fwd = vanilla.t.dense.fwd;
  // qkv's input, the attention norm's output, quantized before SP's gather: seq 8192 over
  // CP2 and TP4 -> 1024 tokens x hidden 16384.
  const double elems = 1024.0 * 16384;
  const auto& cast = find(fwd, "attn.norm.quant");
  CHECK(cast.work.cls == hw_models::KernelClass::quantize);
  CHECK(cast.work.bytes == Approx(elems * (2 + 2 * (0.5 + 1.0 / 16))));
  CHECK(find(fwd, "attn.norm.quant.amax").work.bytes == Approx(elems * 2));
  CHECK(find(fwd, "attn.norm.quant.amax_zero").cpp_launch);
  CHECK(count(fwd, "attn.norm.quant.hadamard") == 0);
  // fprop: alpha, then the FP4 GEMM, whose saved input is the half-byte copy of the local
  // shard (TransformerEngine gathers it again in backward).
  const auto& fprop = find(fwd, "attn.qkv.fprop");
  CHECK(fprop.work.dtype == hw_models::Dtype::fp4);
  CHECK(fprop.saved_bytes == Approx(elems * (0.5 + 1.0 / 16)));
  CHECK(count(fwd, "attn.qkv.fprop.alpha") == 1);
  // Backward: every GEMM in FP4 with its alpha; gradients' casts round to nearest here.
  const auto& bwd = vanilla.t.dense.bwd;
  CHECK(find(bwd, "attn.qkv.dgrad").work.dtype == hw_models::Dtype::fp4);
  CHECK(find(bwd, "attn.qkv.wgrad").work.dtype == hw_models::Dtype::fp4);
  CHECK(count(bwd, "attn.qkv.dgrad.alpha") == 1);
  CHECK(count(bwd, "attn.qkv.wgrad.alpha") == 1);
  CHECK(find(bwd, "attn.qkv.grad_quant").time_factor == 1.0);
  // TE's defaults before TE 2.15: the Hadamard amax, a row-wise cast and a column-wise
  // Hadamard cast that reads the input again; stochastic rounding on the gradients only.
  const auto& tf = te.t.dense.fwd;
  CHECK(find(tf, "attn.norm.quant.hadamard_amax").work.bytes == Approx(elems * 2));
  CHECK(find(tf, "attn.norm.quant").work.bytes == Approx(elems * (2 + 0.5 + 1.0 / 16)));
  CHECK(find(tf, "attn.norm.quant.hadamard_cast").work.bytes ==
        Approx(elems * (2 + 0.5 + 1.0 / 16)));
  CHECK(find(tf, "attn.norm.quant").time_factor == 1.0);
  CHECK(find(te.t.dense.bwd, "attn.qkv.grad_quant").time_factor ==
        Approx(7.2 / 7.0));  // row-wise alone
  CHECK(find(te.t.dense.bwd, "attn.qkv.grad_quant.hadamard_cast").time_factor == Approx(6.4 / 4.5));
  CHECK(find(tf, "attn.norm.quant").host_allocs == 6);
  // Grouped splits: Qwen3-30B's 8 local experts (EP16) share one amax pass; with the
  // transform one grouped cast, without it a cast per expert.
  const auto grouped =
      build("scenarios/measured/a14-qwen3-30b-h100-overlap-on.json", [](config::Scenario& sc) {
        sc.training.precision = workload::Precision::nvfp4;
        sc.training.nvfp4 = {true, true};
      });
  const auto plain =
      build("scenarios/measured/a14-qwen3-30b-h100-overlap-on.json", [](config::Scenario& sc) {
        sc.training.precision = workload::Precision::nvfp4;
        sc.training.nvfp4 = {false, true};
      });
  const auto casts = [](const auto& v, const std::string& n) {
    return std::count_if(v.begin(), v.end(), [&](const auto& k) { return k.name == n; });
  };
  CHECK(casts(grouped.t.moe.fwd, "moe.fc1.quant") == 1);
  CHECK(casts(plain.t.moe.fwd, "moe.fc1.quant") == 8);
  CHECK(casts(grouped.t.moe.fwd, "moe.fc1.quant.hadamard_amax") == 1);
  CHECK(casts(plain.t.moe.fwd, "moe.fc1.quant.amax") == 1);
  CHECK(casts(grouped.t.moe.fwd, "moe.fc1.fprop.alpha") == 8);
}

// Under sequence parallelism TransformerEngine quantizes a rank's shard before the gather
// and gathers it quantized (module/linear.py, base.py grad_output_preprocess, distributed.py
// @ d0067d0d). Llama 3.1 405B, TP4, seq 8192, MBS 1: T = 8192 tokens gathered, Tn = 2048 a
// rank's own, hidden 16384.
//   forward gather (row-wise copy): FP8 per-tensor T h x 1 byte, MXFP8 T h (1 + 1/32),
//     NVFP4 T h (1/2 + 1/16); its backward reduce-scatter stays BF16 (T h x 2);
//   backward gather of a row-parallel output gradient: both copies, 2 x the above, but
//     per-tensor FP8 the row-wise copy only (T h);
//   the output gradient's cast runs on Tn rows before that gather (a quarter of T);
//   current scaling and NVFP4 all-reduce the amax over TP before the scale / cast (4 bytes;
//   NVFP4's row- and column-wise amaxes in one call, 8), MXFP8 and delayed scaling none.
TEST_CASE("Sequence parallelism gathers quantized shards and reduces the amax over TP",
          "[workload][templates]") {
  const double T = 8192, Tn = 2048, h = 16384;
  const std::string file = "scenarios/bridge-dense/bridge-llama405b-gb200-fp8cs-2606.json";
  const auto cs = build(file);
  const auto& L = cs.t.dense;
  CHECK(find(L.fwd, "attn.sp_gather.fwd").comm_bytes == Approx(T * h * 1));
  CHECK(find(L.bwd, "attn.sp_gather.bwd").comm_bytes == Approx(T * h * 2));
  CHECK(find(L.bwd, "attn.sp_scatter.bwd").comm_bytes == Approx(T * h * 1));
  // A kernel's position in its pass (a missing kernel fails here, not vacuously below).
  const auto index = [](const std::vector<workload::KernelTemplate>& v, const std::string& n) {
    const auto it = std::find_if(v.begin(), v.end(), [&](const auto& k) { return k.name == n; });
    INFO(n);
    CHECK(it != v.end());
    return it - v.begin();
  };
  const auto exact = [](const std::vector<workload::KernelTemplate>& v, const std::string& n) {
    return std::count_if(v.begin(), v.end(), [&](const auto& k) { return k.name == n; });
  };
  // Forward: norm, amax zero, (the norm's amax), the TP all-reduce, scale, cast, gather.
  const auto& amax = find(L.fwd, "attn.norm.quant.tp_amax");
  CHECK(amax.comm == workload::CommOp::tp_amax_all_reduce);
  CHECK(amax.comm_bytes == 4);
  CHECK(index(L.fwd, "attn.norm.quant.tp_amax") < index(L.fwd, "attn.norm.quant.scale"));
  CHECK(index(L.fwd, "attn.norm.quant") < index(L.fwd, "attn.sp_gather.fwd"));
  // Backward: o_proj's gradient cast (a quarter of the rows) and its all-reduce before the
  // gather, then dgrad.
  CHECK(index(L.bwd, "attn.o_proj.grad_quant") < index(L.bwd, "attn.sp_scatter.bwd"));
  CHECK(index(L.bwd, "attn.o_proj.grad_quant.tp_amax") <
        index(L.bwd, "attn.o_proj.grad_quant.scale"));
  CHECK(index(L.bwd, "attn.sp_scatter.bwd") < index(L.bwd, "attn.o_proj.dgrad"));
  CHECK(exact(L.bwd, "attn.o_proj.grad_quant") == 1);  // moved, not copied
  const auto no_sp =
      build(file, [](config::Scenario& sc) { sc.parallelism.sequence_parallel = false; });
  CHECK(find(L.bwd, "attn.o_proj.grad_quant").work.bytes ==
        Approx(find(no_sp.t.dense.bwd, "attn.o_proj.grad_quant").work.bytes * Tn / T));
  CHECK(count(no_sp.t.dense.fwd, "attn.norm.quant.tp_amax") == 0);
  CHECK(count(no_sp.t.dense.bwd, "mlp.fc2.grad_quant.tp_amax") == 0);
  CHECK(count(L.bwd, "mlp.fc2.grad_quant.tp_amax") == 1);

  const auto mx =
      build(file, [](config::Scenario& sc) { sc.training.precision = workload::Precision::mxfp8; });
  CHECK(find(mx.t.dense.fwd, "mlp.sp_gather.fwd").comm_bytes == Approx(T * h * (1 + 1.0 / 32)));
  CHECK(find(mx.t.dense.bwd, "mlp.sp_scatter.bwd").comm_bytes ==
        Approx(T * h * 2 * (1 + 1.0 / 32)));
  CHECK(count(mx.t.dense.fwd, "attn.norm.quant.tp_amax") == 0);
  CHECK(count(mx.t.dense.bwd, "mlp.fc2.grad_quant.tp_amax") == 0);

  const auto fp4 = build(file, [](config::Scenario& sc) {
    sc.training.precision = workload::Precision::nvfp4;
    sc.framework.tp_comm_overlap = false;
  });
  CHECK(find(fp4.t.dense.fwd, "attn.sp_gather.fwd").comm_bytes ==
        Approx(T * h * workload::kNvfp4Bytes));
  CHECK(find(fp4.t.dense.bwd, "attn.sp_scatter.bwd").comm_bytes ==
        Approx(T * h * 2 * workload::kNvfp4Bytes));
  CHECK(find(fp4.t.dense.fwd, "attn.norm.quant.tp_amax").comm_bytes == 8);
  CHECK(index(fp4.t.dense.fwd, "attn.norm.quant.tp_amax") <
        index(fp4.t.dense.fwd, "attn.norm.quant"));

  // Hopper's FP8 GEMMs take TN operands only: a per-tensor FP8 tensor gathered row-wise is
  // transposed after the gather for the GEMM that reads it column-wise (the weight
  // gradients): o_proj's output gradient and qkv's re-gathered input, T h each, read and
  // written. Blackwell (the scenarios' own templates above) and MXFP8 have none.
  auto hopper = cs.sc;
  const auto ht =
      workload::build_templates({hopper.model, hopper.training, hopper.parallelism,
                                 hopper.framework, hopper.stack, hopper.padded_vocab(), 1, true});
  CHECK(find(ht.dense.bwd, "attn.o_proj.grad_quant.sp_transpose").work.bytes == Approx(2 * T * h));
  CHECK(find(ht.dense.bwd, "attn.qkv.sp_transpose").work.bytes == Approx(2 * T * h));
  CHECK(index(ht.dense.bwd, "attn.qkv.sp_regather") < index(ht.dense.bwd, "attn.qkv.sp_transpose"));
  CHECK(index(ht.dense.bwd, "attn.qkv.sp_transpose") < index(ht.dense.bwd, "attn.qkv.wgrad"));
  CHECK(count(L.bwd, "attn.qkv.sp_transpose") == 0);
  hopper.training.precision = workload::Precision::mxfp8;
  const auto hm =
      workload::build_templates({hopper.model, hopper.training, hopper.parallelism,
                                 hopper.framework, hopper.stack, hopper.padded_vocab(), 1, true});
  CHECK(count(hm.dense.bwd, "attn.qkv.sp_transpose") == 0);
  // Under userbuffers the ring exchange stays on the gradient's gather, not the transpose
  // after it; MXFP8's scale swizzles stay with the GEMMs, after the gather.
  CHECK(cs.sc.framework.tp_comm_overlap);
  CHECK(find(ht.dense.bwd, "attn.sp_scatter.bwd").tp_overlap == workload::TpOverlap::ring);
  CHECK(find(ht.dense.bwd, "attn.o_proj.grad_quant.sp_transpose").tp_overlap ==
        workload::TpOverlap::none);
  CHECK(index(hm.dense.bwd, "attn.sp_scatter.bwd") <
        index(hm.dense.bwd, "attn.o_proj.grad_quant.swizzle"));

  // A TE Linear on a BF16 input (the shared expert's fc1) quantizes the shard itself before
  // the gather: DeepSeek-V3 at TP2 under current scaling.
  const auto moe = build("scenarios/journey/13-norm-quant-fusion.json", [](config::Scenario& sc) {
    sc.parallelism.tp = 2;
    sc.parallelism.sequence_parallel = true;
    sc.training.precision = workload::Precision::fp8_tensorwise;
  });
  CHECK(count(moe.t.moe.fwd, "shared.sp_quant.tp_amax") == 1);
  CHECK(count(moe.t.moe.fwd, "shared.fc1.quant") == 0);
  CHECK(index(moe.t.moe.fwd, "shared.sp_quant") < index(moe.t.moe.fwd, "shared.sp_gather.fwd"));
  // MLA's down-projections take the rank's own tokens ('duplicated' TE Linears): no gather
  // of the hidden states and no TP amax there, 2,048 of the 4,096 tokens each; the
  // up-projections gather their latents, quantized by the column-parallel Linear (with its
  // TP amax); Megatron gathers k_pe itself, BF16; the latents are regathered for wgrad.
  CHECK(count(moe.t.moe.fwd, "attn.norm.quant.tp_amax") == 0);
  CHECK(count(moe.t.moe.fwd, "attn.sp_gather") == 0);
  CHECK(find(moe.t.moe.fwd, "attn.q_a.fprop").work.flops == Approx(2 * 2048.0 * 1536 * 7168));
  CHECK(find(moe.t.moe.fwd, "attn.kv_a.fprop").work.flops == Approx(2 * 2048.0 * 576 * 7168));
  CHECK(find(moe.t.moe.fwd, "attn.q_b.sp_gather.fwd").comm_bytes == Approx(4096.0 * 1536));
  CHECK(find(moe.t.moe.fwd, "attn.kv_b.sp_gather.fwd").comm_bytes == Approx(4096.0 * 512));
  CHECK(find(moe.t.moe.fwd, "attn.k_pe.sp_gather.fwd").comm_bytes == Approx(4096.0 * 64 * 2));
  CHECK(count(moe.t.moe.fwd, "attn.q_b.sp_quant.tp_amax") == 1);
  CHECK(count(moe.t.moe.fwd, "attn.q_b.quant") == 0);
  CHECK(count(moe.t.moe.bwd, "attn.q_b.sp_regather") == 1);
  CHECK(count(moe.t.moe.bwd, "attn.q_a.sp_regather") == 0);
  CHECK(find(moe.t.moe.fwd, "attn.q_a_norm.fwd").work.bytes == Approx(2048.0 * 1536 * 2 * 2));
  // Without a q LoRA (Moonlight, TP2) q is one column-parallel Linear on the gathered hidden
  // states: 8 of 16 heads of 192 from 2,048, on all 4,096 tokens.
  const auto moon = build("scenarios/recompute/moonlight-h100-recompute-control.json");
  REQUIRE(moon.sc.parallelism.tp == 2);
  CHECK(find(moon.t.moe.fwd, "attn.q.fprop").work.flops == Approx(2 * 4096.0 * 8 * 192 * 2048));
  CHECK(find(moon.t.moe.fwd, "attn.q.sp_gather.fwd").comm_bytes == Approx(4096.0 * 2048 * 2));
  CHECK(count(moon.t.moe.bwd, "attn.q.sp_regather") == 1);
  // MTP's projection gathers its 2 h-wide input (DeepSeek-V3, one MTP layer at TP2).
  const auto mtp = build("scenarios/journey/13-norm-quant-fusion.json", [](config::Scenario& sc) {
    sc.parallelism.tp = 2;
    sc.parallelism.sequence_parallel = true;
    sc.training.mtp_layers = 1;
  });
  CHECK(find(mtp.t.mtp.fwd, "mtp.sp_gather.fwd").comm_bytes ==
        Approx(4096.0 * 2 * 7168 * (1 + 1.0 / 32)));
}

TEST_CASE("At TP > 1 the vocabulary-parallel embedding reduces its rows over TP",
          "[workload][templates]") {
  // Megatron-Core VocabParallelEmbedding: every rank looks up all T tokens, zeroes the rows
  // outside its shard, and the ranks' rows are reduce-scattered to the sequence shard.
  const auto tp1 = build("scenarios/pai/p5-tp1pp32vpp3-mbs4-full.json");
  const auto tp2 = build("scenarios/pai/p4-tp2pp32vpp3-mbs4-full.json");
  REQUIRE(tp2.sc.parallelism.tp == 2);
  CHECK(count(tp1.t.embedding.fwd, "embedding.tp_reduce") == 0);
  const auto& rs = find(tp2.t.embedding.fwd, "embedding.tp_reduce.fwd");
  CHECK(rs.comm == workload::CommOp::tp_reduce_scatter);
  // T = MBS 4 x seq 4096 tokens of h 4096 in BF16.
  CHECK(rs.comm_bytes == Approx(4.0 * 4096 * 4096 * 2));
  CHECK(find(tp2.t.embedding.bwd, "embedding.tp_reduce.bwd").comm ==
        workload::CommOp::tp_all_gather);
}

TEST_CASE("layernorm recompute re-runs only the norms that are modules of their own",
          "[workload][templates]") {
  // GQA's input norm is fused into linear_qkv (not recomputed); the MoE pre-MLP norm is a
  // TENorm (recomputed); MLA's input norm is a TENorm (recomputed).
  const auto gqa = build("scenarios/pai/p2-tp2pp8.json");  // moe_act + layernorm
  CHECK(count(gqa.t.moe.bwd, "attn.norm.fwd.recompute") == 0);
  CHECK(find(gqa.t.moe.bwd, "moe.norm.fwd.recompute").recompute);
  const auto mla = build("scenarios/h800/dsv3-production.json");  // layernorm, mla_up_proj
  CHECK(find(mla.t.moe.bwd, "attn.norm.fwd.recompute").recompute);
}

TEST_CASE("A recompute checkpoint's own host work, by Megatron-Core's wrapper",
          "[workload][templates]") {
  // Megatron-Core's checkpoint wrappers (tensor_parallel/random.py at cd4afffa and
  // 24bad8e677): the RNG states saved, the autograd Function, and in backward the states
  // forked and restored, the nested backward; CheckpointWithoutOutput also releases its
  // output and enters TransformerEngine's recompute context and fp8_autocast even in BF16
  // (workload/layer_graph_detail.hpp): in a BF16 run 12 ops in forward and 24 before the
  // re-run, against tensor_parallel.checkpoint's 7 and 18.
  const auto none = build("scenarios/recompute/moonlight-h100-recompute-control.json");
  const auto act = build("scenarios/recompute/moonlight-h100-recompute-moe-act.json");
  const int plain = find(none.t.moe.fwd, "moe.act.fwd").host_ops;
  CHECK(find(act.t.moe.fwd, "moe.act.fwd").host_ops == plain + 12);
  // The re-run copies the forward's kernel (its module-call ops with it), without the
  // forward wrapper's 12, plus the backward wrapper's 24.
  CHECK(find(act.t.moe.bwd, "moe.act.fwd.recompute").host_ops == plain + 24);
  // Two segments (layernorm's pre-MLP norm and moe_act) are two checkpoints.
  const auto both = build("scenarios/recompute/moonlight-h100-recompute-layernorm-moe-act.json");
  const int norm = find(none.t.moe.fwd, "moe.norm.fwd").host_ops;
  CHECK(find(both.t.moe.fwd, "moe.norm.fwd").host_ops == norm + 12);
  CHECK(find(both.t.moe.bwd, "moe.norm.fwd.recompute").host_ops == norm + 24);
  // mla_up_proj's wrapper enters TransformerEngine's contexts only under FP8/FP4
  // (CheckpointWithoutOutput(fp8=config.fp8 or config.fp4)): in BF16 10 and 18.
  const auto up = build("scenarios/recompute/moonlight-h100-recompute-mla-up-proj.json");
  int fwd_ops = 0, segment_ops = 0, rerun_ops = 0;
  for (const auto& k : up.t.moe.fwd) {
    fwd_ops += k.host_ops;
    if (count(up.t.moe.bwd, k.name + ".recompute") > 0) segment_ops += k.host_ops;
  }
  for (const auto& k : up.t.moe.bwd)
    if (k.name.ends_with(".recompute")) rerun_ops += k.host_ops;
  int plain_ops = 0;
  for (const auto& k : none.t.moe.fwd) plain_ops += k.host_ops;
  CHECK(fwd_ops == plain_ops + 10);
  CHECK(rerun_ops == segment_ops - 10 + 18);
  // core_attn runs under tensor_parallel.checkpoint (CheckpointFunction): 7 and 18.
  const auto core = build("scenarios/recompute/moonlight-h100-recompute-core-attn.json");
  const int plain_core = find(none.t.moe.fwd, "attn.core.fwd").host_ops;
  CHECK(find(core.t.moe.fwd, "attn.core.fwd").host_ops == plain_core + 7);
  CHECK(find(core.t.moe.bwd, "attn.core.fwd.recompute").host_ops == plain_core + 18);
}

TEST_CASE("The CuTe DSL fused grouped MLP: one group quantization, the activation in epilogues",
          "[workload][templates]") {
  // Qwen3-30B-A3B on 16 GB200 (EP16: 8 local experts), MXFP8, TE's op fuser.
  const auto sc = config::load_scenario_file(
      test::source_path("scenarios/mlm-recipes/mlm-qwen3-30b-gb200-mxfp8-full-cg.json"));
  const auto make = [](const config::Scenario& s, bool fused) {
    return workload::build_templates({s.model, s.training, s.parallelism, s.framework, s.stack,
                                      s.padded_vocab(), 1, false, fused});
  };
  const auto unfused = make(sc, false), fused = make(sc, true);
  // The quantize kernels named from `prefix` on: how many, and the bytes they move.
  const auto quantize_kernels = [](const std::vector<workload::KernelTemplate>& v,
                                   const std::string& prefix) {
    std::vector<const workload::KernelTemplate*> out;
    for (const auto& k : v)
      if (k.work.cls == hw_models::KernelClass::quantize && k.name.rfind(prefix, 0) == 0)
        out.push_back(&k);
    return out;
  };
  const auto quantizes = [&](const std::vector<workload::KernelTemplate>& v,
                             const std::string& prefix) {
    return quantize_kernels(v, prefix).size();
  };
  const auto& u = unfused.moe;
  const auto& f = fused.moe;
  // Unfused: each input and output gradient of fc1 and fc2 is quantized per expert.
  CHECK(quantizes(u.fwd, "moe.fc1.quant") == 8);
  CHECK(quantizes(u.fwd, "moe.fc2.quant") == 8);
  CHECK(quantizes(u.bwd, "moe.fc2.grad_quant") == 8);
  CHECK(quantizes(u.bwd, "moe.fc1.grad_quant") == 8);
  // Fused: one group quantization of fc1's input and of fc2's output gradient; fc2's input
  // and fc1's output gradient are written quantized by the GEMMs' epilogues.
  CHECK(quantizes(f.fwd, "moe.fc1.quant") == 1);
  CHECK(quantizes(f.fwd, "moe.fc2.quant") == 0);
  CHECK(quantizes(f.bwd, "moe.fc2.grad_quant") == 1);
  CHECK(quantizes(f.bwd, "moe.fc1.grad_quant") == 0);
  // The group quantization moves what the eight did.
  double eight = 0;
  for (const auto* k : quantize_kernels(u.fwd, "moe.fc1.quant")) eight += k->work.bytes;
  for (const auto* k : quantize_kernels(f.fwd, "moe.fc1.quant"))
    CHECK(k->work.bytes == Approx(eight));
  // No activation kernels; fc2's setup (four small kernels forward, three backward) between
  // the GEMMs; the GEMMs are one launch each.
  CHECK(count(f.fwd, "moe.fc2_setup") == 4);
  CHECK(count(f.bwd, "moe.fc2_setup") == 3);
  CHECK(count(u.fwd, "moe.fc2_setup") == 0);
  CHECK(count(f.fwd, "moe.act") == 0);
  CHECK(count(f.bwd, "moe.act") == 0);
  CHECK(count(u.fwd, "moe.act") == 1);
  for (const char* g : {"moe.fc1.fprop", "moe.fc2.fprop"}) {
    CHECK(find(f.fwd, g).single_launch);
    CHECK_FALSE(find(u.fwd, g).single_launch);
  }
  for (const char* g : {"moe.fc1.dgrad", "moe.fc1.wgrad", "moe.fc2.dgrad", "moe.fc2.wgrad"})
    CHECK(find(f.bwd, g).single_launch);
  // What forward keeps for backward is unchanged: fc1 keeps its output for the activation.
  const auto saved = [](const std::vector<workload::KernelTemplate>& v) {
    double s = 0;
    for (const auto& k : v) s += k.saved_bytes;
    return s;
  };
  CHECK(saved(f.fwd) == Approx(saved(u.fwd)));
  // The fused MLP's offload (expert_fc1_act) moves fc1's output alone, the unfused
  // activation's saved bytes, not fc1's quantized input beside it.
  auto off = sc;
  off.framework.offload = {workload::OffloadTarget::expert_fc1_act};
  const auto o = make(off, true);
  const auto& fc1 = find(o.moe.fwd, "moe.fc1.fprop");
  CHECK(fc1.offloaded_bytes == Approx(find(u.fwd, "moe.act.fwd").saved_bytes));
  CHECK(fc1.saved_bytes > fc1.offloaded_bytes);
  CHECK_FALSE(fc1.offloaded);
}

TEST_CASE("Each block adds its output to the residual stream, and backward sums the fork",
          "[workload][templates]") {
  // Qwen3-30B-A3B, TP1, seq 4096, MBS 1, no hidden dropout: the add reads the block's output
  // and the residual and writes the sum, 3 x 4096 x 2048 x 2 bytes, and has no backward
  // kernel (its gradient passes to both inputs); backward's sum of the block input's two
  // gradients moves the same bytes, launched by the engine from C++ once the block's norm
  // has made the second: the block's last backward kernel.
  const auto b = build("scenarios/measured/a14-qwen3-30b-h100-overlap-off.json");
  const double bytes = 3 * 4096.0 * 2048 * 2;
  const auto& bwd = b.t.moe.bwd;
  const auto at = [&](const std::string& n) { return &find(bwd, n) - bwd.data(); };
  for (const std::string blk : {"attn", "moe"}) {
    INFO(blk);
    CHECK(find(b.t.moe.fwd, blk + ".residual_add.fwd").work.bytes == Approx(bytes));
    CHECK(find(b.t.moe.fwd, blk + ".residual_add.fwd").saved_bytes == 0);
    CHECK(count(bwd, blk + ".residual_add") == 0);
    const auto& sum = find(bwd, blk + ".residual_grad_sum.bwd");
    CHECK(sum.work.bytes == Approx(bytes));
    CHECK(sum.cpp_launch);
    CHECK(at(blk + ".residual_grad_sum.bwd") == at(blk + ".norm.bwd") + 1);
  }
  // The attention block's backward comes last in the layer's, and its sum ends it.
  CHECK(bwd.back().name == "attn.residual_grad_sum.bwd");
  // Dropout adds the one-byte mask (kept for backward) and its backward on the gradient.
  const auto d = build("scenarios/measured/a14-qwen3-30b-h100-overlap-off.json",
                       [](config::Scenario& sc) { sc.training.hidden_dropout = 0.1; });
  const double e = 4096.0 * 2048;
  CHECK(count(d.t.moe.fwd, "attn.residual_add") == 0);
  CHECK(find(d.t.moe.fwd, "attn.bda.fwd").work.bytes == Approx(7 * e));
  CHECK(find(d.t.moe.fwd, "attn.bda.fwd").saved_bytes == Approx(e));
  CHECK(find(d.t.moe.bwd, "attn.bda.bwd").work.bytes == Approx(5 * e));
  CHECK(find(d.t.moe.bwd, "attn.residual_grad_sum.bwd").work.bytes == Approx(6 * e));
  // DeepSeek-V4's mHC adds into its streams in its own kernel: no residual add here.
  const auto v = build("scenarios/dsv4/card-dsv4-flash-gb200-mxfp8.json");
  CHECK(count(v.t.moe_csa.fwd, "mlp.mhc_post") == 1);
  CHECK(count(v.t.moe_csa.fwd, "moe.residual_add") == 0);
  CHECK(count(v.t.moe_csa.fwd, "attn.residual_add") == 0);
}
