// calibration/kineto_trace.hpp: kernel names to classes, and a trace's totals.
#include <catch2/catch.hpp>

#include "calibration/kineto_trace.hpp"

using namespace moesim::calibration;

TEST_CASE("Kernel names from real traces land in their classes", "[calibration][trace]") {
  const std::vector<std::pair<const char*, TraceClass>> cases{
      // deepseek-ai/profile-data train.json
      // DeepSeek's dense FP8 GEMMs sit in a namespace called grouped_gemm.
      {"void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(Params)",
       TraceClass::gemm},
      {"void "
       "cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel>(Params)",
       TraceClass::gemm},
      {"void "
       "cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>("
       "Params)",
       TraceClass::grouped_gemm},
      {"void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(unsigned char const*)",
       TraceClass::quantize},
      {"void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128, false, 128, false>(x)",
       TraceClass::quantize},
      {"void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*, float*)",
       TraceClass::ep_dispatch},
      {"void dpsk::ep::internode::notify_dispatch<false, 8>(int const*)", TraceClass::ep_dispatch},
      {"void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*)",
       TraceClass::ep_dispatch},
      {"void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*)",
       TraceClass::ep_combine},
      {"void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1>>(x)",
       TraceClass::attention_fwd},
      {"void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>(x)",
       TraceClass::attention_bwd},
      {"void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>>>>(x)",
       TraceClass::attention_bwd},
      {"sm90_xmma_gemm_bf16f32_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute",
       TraceClass::gemm},
      {"void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16>>(x)",
       TraceClass::norm},
      {"void layer_norm::ln_bwd_finalize_kernel<layer_norm::Kernel_traits_finalize<7168u>>(x)",
       TraceClass::norm},
      {"_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_17e44f7d43distribution_"
       "elementwise",
       TraceClass::elementwise},  // "Normal" is not a norm
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
       TraceClass::elementwise},
      {"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(x)",
       TraceClass::elementwise},
      // Transformer Engine, cuBLAS, cuDNN, NCCL
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", TraceClass::gemm},
      {"void transformer_engine::detail::cast_transpose_fused_kernel_notaligned<true>(x)",
       TraceClass::quantize},
      {"void transformer_engine::rmsnorm_fwd_tuned_kernel<x>(y)", TraceClass::norm},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3",
       TraceClass::attention_bwd},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_6",
       TraceClass::attention_fwd},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       TraceClass::communication},
      // Not what a bare word would make of them: FlashAttention's split-KV combine, PyTorch's
      // dtype copy, CUTLASS's broadcast epilogue, a norm with an FP8 output.
      {"void flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>>>(x)", TraceClass::attention_fwd},
      {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda, "
       "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(x)",
       TraceClass::elementwise},
      {"void "
       "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<Sm90RowBroadcast<float>>>(x)",
       TraceClass::gemm},
      {"void transformer_engine::rmsnorm_fwd_tuned_kernel<Kernel_traits<__nv_fp8_e4m3>>(x)",
       TraceClass::norm},
  };
  for (const auto& [name, cls] : cases) {
    INFO(name);
    CHECK(trace_class_names().name(classify_kernel(name)) == trace_class_names().name(cls));
  }
}

TEST_CASE("A trace's totals: kernel time, the union of the kernels, the span",
          "[calibration][trace]") {
  // Stream 7: [0, 100] and [100, 150]; stream 27: [50, 250] (us); then [300, 320].
  const std::vector<TraceKernel> k{{TraceClass::grouped_gemm, 0, 100e-6},
                                   {TraceClass::gemm, 100e-6, 150e-6},
                                   {TraceClass::ep_dispatch, 50e-6, 250e-6},
                                   {TraceClass::norm, 300e-6, 320e-6}};
  const auto t = trace_totals(k);
  CHECK(t.kernels == 4);
  CHECK(t.kernel_s == Approx(370e-6));
  CHECK(t.busy_s == Approx(270e-6));  // [0, 250] and [300, 320]
  CHECK(t.span_s == Approx(320e-6));
  CHECK(t.overlapped_s() == Approx(100e-6));
  CHECK(t.by_class[static_cast<std::size_t>(TraceClass::ep_dispatch)].seconds == Approx(200e-6));
  CHECK(trace_totals({}).kernels == 0);
}

// DeepSeek's DualPipe marks each overlapped node on the host thread as part(pass):
// train.json's "attn(F)", "dispatch(B)", "mlp(W)"; the profiler's own ranges
// ("ProfilerStep#1") and the schedule's ("1F1B") are not nodes.
TEST_CASE("Schedule-node host ranges are named part(F|B|W)", "[calibration][trace]") {
  for (const char* yes : {"attn(F)", "dispatch(B)", "mlp(W)", "combine(F)", "shared_expert(B)"})
    CHECK(is_host_node_name(yes));
  for (const char* no :
       {"ProfilerStep#1", "1F1B", "(F)", "attn(X)", "attn (F)", "attn(F", "mlp2(B)", ""})
    CHECK_FALSE(is_host_node_name(no));
}
