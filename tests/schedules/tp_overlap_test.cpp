// framework.tp_comm_overlap (schedules/kernel_pricing.hpp, workload::TpOverlap): the
// sequence-parallel collectives' kernels keep only their exposed part, by the closed forms
// of TransformerEngine's ring-exchange, pipelined and bulk overlaps, read off the trace, the
// split GEMMs priced chunk by chunk.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "config/load.hpp"
#include "hw_models/compute.hpp"
#include "hw_models/flow_comm.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("TP communication overlap: each collective keeps its exposed part",
          "[schedules][tp-overlap][closed-form]") {
  const auto off = test::first_durations(test::traced_tp8({{"tp_comm_overlap", false}})),
             on = test::first_durations(test::traced_tp8({{"tp_comm_overlap", true}}));
  const double n = 8, sms = 132, k = 16, streams = 3;
  // Llama3-70B at TP8, 8,192 tokens, BF16: the chunked GEMMs against the whole ones by the
  // GPU's own GEMM model (its wave quantization and K efficiency; the clock cancels), within
  // 0.1%: the templates' HBM bytes carry more than the three operands.
  const hw_models::ComputeModel gpu(config::load_system_preset("h100"));
  const auto gemm = [&](double m, double nn, double kk) {
    return gpu.seconds({hw_models::KernelClass::gemm, hw_models::Dtype::bf16, 2 * m * nn * kk,
                        (m * kk + kk * nn + m * nn) * 2, static_cast<std::int64_t>(m),
                        static_cast<std::int64_t>(nn), static_cast<std::int64_t>(kk), 1, 2});
  };
  const double T = 8192, h = 8192, qkv = (8192 + 2 * 1024) / n;
  // Ring exchange (the forward all-gather into the QKV GEMM): 8 GEMMs of T / 8 rows on 3
  // streams, priced as 8 / 3 GEMMs of 3 T / 8 rows; the gather keeps what is left of
  // t_1 + (n - 1) max(t_1, t_c / n), t_1 = t_g / n.
  {
    const double tc = off.at("attn.sp_gather.fwd"), tg = off.at("attn.qkv.fprop");
    const double tgc = tg * n / streams * gemm(streams * T / n, qkv, h) / gemm(T, qkv, h);
    CHECK(tgc > tg);  // three chunks: 3,072 rows x 1,280 columns, 240 tiles on 132 SMs
    CHECK(on.at("attn.qkv.fprop") == Approx(tgc).epsilon(1e-3));
    const double t1 = on.at("attn.qkv.fprop") / n;
    CHECK(on.at("attn.sp_gather.fwd") ==
          Approx(std::max(0.0, t1 + (n - 1) * std::max(t1, tc / n) - n * t1)).margin(1e-9));
    CHECK(on.at("attn.sp_gather.fwd") < tc);
  }
  // Pipelined reduce-scatter (after the output projection): 4 GEMMs of a quarter of the
  // output features on 3 streams, on S - 16 SMs.
  {
    const double tc = off.at("attn.sp_scatter.fwd"), tg = off.at("attn.o_proj.fprop");
    const double tgs =
        tg * 4 / streams * gemm(T, streams * h / 4, h / n) / gemm(T, h, h / n) * sms / (sms - k);
    CHECK(on.at("attn.o_proj.fprop") == Approx(tgs).epsilon(1e-3));
    const double t = on.at("attn.o_proj.fprop");
    CHECK(on.at("attn.sp_scatter.fwd") ==
          Approx(std::max(t, tc) + std::min(t, tc) / 4 - t).margin(1e-9));
  }
  // Bulk, with and without userbuffers (TE's async NCCL collectives under sequence
  // parallelism wait after the GEMM beside them): the backward reduce-scatter beside the
  // QKV weight gradient, and the re-gather of the QKV input's saved shard beside its
  // dgrad. The collectives' own time: a ring over the 8 GPUs of the TP group, T x h BF16.
  {
    const auto sys = config::load_system_preset("h100");
    const hw_models::FlowComm comm(sys, 8, 8);
    const double tc = comm.all_gather(8192.0 * 8192 * 2, {8, false, 1});
    for (const auto* p : {&off, &on}) {
      const double tw = p->at("attn.qkv.wgrad"), td = p->at("attn.qkv.dgrad");
      // Both GEMMs ran on S - 16 SMs: their time is the bare GEMM's x S / (S - 16).
      CHECK(p->at("attn.sp_gather.bwd") ==
            Approx(std::max(0.0, std::max(tw, tc) - tw)).margin(1e-9));
      CHECK(p->at("attn.qkv.sp_regather") ==
            Approx(std::max(0.0, std::max(td, tc) - td)).margin(1e-9));
    }
    CHECK(on.at("attn.qkv.wgrad") == Approx(off.at("attn.qkv.wgrad")).epsilon(1e-9));
    (void)k;
  }
  // And the step is faster for it.
  CHECK(test::traced_tp8({{"tp_comm_overlap", true}}).step.step_time_s <
        test::traced_tp8({{"tp_comm_overlap", false}}).step.step_time_s);
}

// The host side (schedules/kernel_pricing.hpp, "userbuffers' host work"): TE drives each
// overlapped collective from C++, so its host op is that work's calls, each at the preset's
// measured cost, times the loaded-process factor, in place of an eager launch: a ring at TP 8
// launches 7 further chunk GEMMs and 6 x 7 + 16 other CUDA calls, a pipelined reduce-scatter
// 3 further GEMMs and 25 calls, a bulk collective 9 calls. Without the overlap each collective
// is an eager PyTorch launch. The host op's name is the kernel's.
TEST_CASE("TP communication overlap: the collectives' host work is userbuffers' C++ calls",
          "[schedules][tp-overlap][host]") {
  const auto off = test::first_durations(test::traced_tp8({{"tp_comm_overlap", false}}), -1),
             on = test::first_durations(test::traced_tp8({{"tp_comm_overlap", true}}), -1);
  const auto sys = config::load_system_preset("h100");
  const double gemm = sys.host.library_launch_us.value, call = sys.host.cpp_launch_us->value,
               eager = sys.host.elementwise_launch_us->value;
  // The loaded-process factor, from the eager launch without the overlap (the MLP's
  // collectives: the helper's attention is graph-captured).
  const double factor = off.at("mlp.sp_gather.fwd") / (eager * 1e-6);
  CHECK(factor > 1);
  CHECK(off.at("mlp.sp_scatter.fwd") == Approx(off.at("mlp.sp_gather.fwd")));
  CHECK(on.at("mlp.sp_gather.fwd") == Approx((7 * gemm + (6 * 7 + 16) * call) * factor * 1e-6));
  CHECK(on.at("mlp.sp_scatter.fwd") == Approx((3 * gemm + 25 * call) * factor * 1e-6));
  CHECK(on.at("mlp.sp_gather.bwd") == Approx(9 * call * factor * 1e-6));
  // The output layer is Megatron's own linear, which userbuffers do not serve: its
  // collectives stay eager launches.
  CHECK(on.at("head.sp_gather.bwd") == Approx(off.at("head.sp_gather.bwd")));
  CHECK(on.at("head.output.sp_regather") == Approx(off.at("head.output.sp_regather")));
  // At TP 8 the ring's host work is more than eight eager launches' worth.
  CHECK(on.at("mlp.sp_gather.fwd") > 8 * off.at("mlp.sp_gather.fwd"));
}

TEST_CASE("TP communication overlap needs sequence parallelism",
          "[schedules][tp-overlap][config]") {
  auto j = config::Json::parse(R"({
    "name": "x", "system": "h100", "gpus": 8, "model": "llama3-70b",
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"},
    "parallelism": {"tp": 8, "sequence_parallel": false}, "framework": {"tp_comm_overlap": true}
  })");
  try {
    config::load_scenario_text(j.dump(), "t.json");
    FAIL("accepted");
  } catch (const config::InputError& e) {
    CHECK(std::string(e.what()).find("framework.tp_comm_overlap") != std::string::npos);
    CHECK(std::string(e.what()).find("sequence_parallel") != std::string::npos);
  }
}
