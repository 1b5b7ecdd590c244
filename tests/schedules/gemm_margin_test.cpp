// framework.gemm_sm_margin (TransformerEngine's NVTE_EXT_MARGIN_SM): every GEMM runs on the
// SMs the margin leaves, S / (S - m) longer alone; attention is not a TE GEMM and keeps its time.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

TEST_CASE("A GEMM SM margin runs each GEMM on the SMs it leaves", "[schedules][closed-form]") {
  const auto none = test::first_durations(test::traced_tp8({{"gemm_sm_margin", 0}})),
             margin = test::first_durations(test::traced_tp8({{"gemm_sm_margin", 16}}));
  const double sms = 132, m = 16;
  for (const char* gemm : {"attn.qkv.fprop", "attn.o_proj.fprop", "mlp.fc1.fprop"}) {
    INFO(gemm);
    CHECK(margin.at(gemm) == Approx(none.at(gemm) * sms / (sms - m)).margin(2e-12));
  }
  CHECK(margin.at("attn.core.fwd") == Approx(none.at("attn.core.fwd")).margin(2e-12));
  CHECK_THROWS_AS(config::load_scenario_text(
                      R"({"name": "x", "system": "h100", "gpus": 8, "model": "llama3-70b",
              "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8},
              "parallelism": {"tp": 8}, "framework": {"gemm_sm_margin": 132}})",
                      "x.json"),
                  config::InputError);
}
