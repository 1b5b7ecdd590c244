// stack.release (issue #25 item 1): a named release resolves to the switches it shipped
// and refuses the features it did not; explicit keys win; "custom" needs them all.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/load.hpp"
#include "config/releases.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;
using config::Json;
using test::load;

namespace {
using test::patched;
const config::SoftwareRelease& release(std::string_view name) {
  const auto* r = config::find_release(name);
  REQUIRE(r != nullptr);
  return *r;
}
// The refusal's JSON path, or "" when the scenario loads.
std::string refused_at(const Json& j) {
  try {
    load(j);
  } catch (const config::InputError& e) {
    return e.path();
  }
  return "";
}
}  // namespace

TEST_CASE("Every release resolves every switch on every GPU", "[config][releases]") {
  for (const auto& r : config::software_releases())
    for (const char* gpu : {"GB200", "GB300", "H100 SXM", "B200 (HGX)", "H800 SXM"})
      CHECK_NOTHROW(config::resolve_release(r, gpu));
  // Oldest first, names unique.
  const auto all = config::software_releases();
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].version < all[i].version);
}

TEST_CASE("A release's switches follow the first release that shipped each", "[config][releases]") {
  // docs/research/releases.md section 4, read by hand.
  const auto r2504 = config::resolve_release(release("25.04"), "GB200").stack;
  CHECK_FALSE(r2504.mxfp8_alloc_fusion);
  CHECK_FALSE(r2504.router_fusion);
  CHECK(r2504.cpu_numa_binding);  // NeMo 2.3.0 bound every GB200 rank (to node 0)
  CHECK_FALSE(r2504.hybridep_permute_fusion);
  const auto r2509 = config::resolve_release(release("25.09"), "GB200").stack;
  CHECK(r2509.mxfp8_alloc_fusion);
  CHECK(r2509.permute_fusion_v2);
  CHECK(r2509.router_fusion);
  CHECK(r2509.swizzle_fusion);
  CHECK(r2509.cpu_numa_binding);
  CHECK_FALSE(r2509.norm_quant_fusion);  // cuDNN 9.11
  CHECK_FALSE(r2509.cuda_graph_shared_expert);
  CHECK_FALSE(r2509.hybridep_permute_fusion);
  // Every release's launcher binds (GB300 to node 0 before Bridge 0.3.0, 26.02); x86 nodes
  // were always bound to their own sockets.
  CHECK(config::resolve_release(release("25.11"), "GB300").stack.cpu_numa_binding);
  CHECK(config::resolve_release(release("26.02"), "GB300").stack.cpu_numa_binding);
  CHECK(config::resolve_release(release("23.09"), "H100 SXM").stack.cpu_numa_binding);
  const auto r2602 = config::resolve_release(release("26.02"), "GB200");
  CHECK(r2602.stack.norm_quant_fusion);
  // NVFP4's fused Hadamard cast is TE 2.15's: 26.04 ships TE 2.14, 26.06 TE 2.16.
  CHECK_FALSE(config::resolve_release(release("26.04.01"), "GB200").stack.nvfp4_rht_fusion);
  CHECK(config::resolve_release(release("26.06"), "GB300").stack.nvfp4_rht_fusion);
  CHECK(r2602.stack.cuda_graph_shared_expert);
  // No release shipped PDL quantization; DeepEP's tuning is unsettled everywhere, the slim TE
  // host code from 26.02 (TE 2.12's upstream CPU work), off before.
  for (const auto& r : config::software_releases()) {
    INFO(r.name);
    const auto res = config::resolve_release(r, "GB200");
    CHECK_FALSE(res.stack.pdl_quant);
    const bool te212 = r.version >= config::ReleaseVersion{26, 2, 0};
    CHECK(res.stack.te_host_slim == te212);
    CHECK(res.unsettled == (te212 ? std::vector<std::string>{"te_host_slim", "deepep_tuned"}
                                  : std::vector<std::string>{"deepep_tuned"}));
  }
}

TEST_CASE("stack.release in a scenario: explicit keys win, later features are refused",
          "[config][releases]") {
  const Json base =
      test::default_scenario_json();  // GB200, MXFP8, HybridEP, router/preprocess graphs
  const auto sc = load(patched(base, R"({"stack": {"release": "26.02", "pdl_quant": true}})"));
  CHECK(sc.release == "26.02");
  CHECK(sc.stack.pdl_quant);     // given
  CHECK(sc.stack.te_host_slim);  // unsettled: taken as on
  CHECK(sc.stack.norm_quant_fusion);
  CHECK(sc.release_unsettled == std::vector<std::string>{"te_host_slim", "deepep_tuned"});
  CHECK(
      load(patched(
               base,
               R"({"stack": {"release": "26.02", "deepep_tuned": false, "te_host_slim": false}})"))
          .release_unsettled.empty());

  // HybridEP and the router graph scopes came with 25.11, EP overlap with 25.09.
  CHECK(refused_at(patched(base, R"({"stack": {"release": "25.09"}})")) == "framework.dispatcher");
  const Json deepep =
      patched(base, R"({"framework": {"dispatcher": "deepep", "dispatcher_sms": 24}})");
  CHECK(refused_at(patched(deepep, R"({"stack": {"release": "25.09"}})")) ==
        "framework.cuda_graph_scope");
  const Json ungraphed = patched(deepep, R"({"framework": {"cuda_graph_scope": []}})");
  CHECK(refused_at(patched(ungraphed, R"({"stack": {"release": "25.09"}})")).empty());
  CHECK(refused_at(patched(ungraphed, R"({"stack": {"release": "25.07"}})")).empty());
  const Json overlap = patched(ungraphed, R"({"parallelism": {"pp": 4, "vpp": 2, "pp_layout": null},
                                              "framework": {"moe_a2a_overlap": true}})");
  CHECK(refused_at(patched(overlap, R"({"stack": {"release": "25.09"}})")).empty());
  CHECK(refused_at(patched(overlap, R"({"stack": {"release": "25.07"}})")) ==
        "framework.moe_a2a_overlap");
  // MXFP8 came with Megatron-Core 0.12 (25.04).
  CHECK(refused_at(patched(ungraphed, R"({"stack": {"release": "25.01"}})")) ==
        "training.precision");
  // NVFP4 with TE 2.8 (25.11's TE 2.9), its grouped GEMMs for experts with TE 2.10 (26.02).
  const Json nvfp4 = patched(ungraphed, R"({"training": {"precision": "nvfp4"}})");
  CHECK(refused_at(patched(nvfp4, R"({"stack": {"release": "25.11"}})")) == "training.precision");
  CHECK(refused_at(patched(nvfp4, R"({"stack": {"release": "26.02"}})")).empty());
  const Json dense = Json::parse(R"({"name": "d", "system": "gb200-nvl72", "gpus": 8,
    "model": {"base": "llama3-70b", "num_hidden_layers": 2},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "nvfp4"},
    "parallelism": {"tp": 2}})");
  CHECK(refused_at(patched(dense, R"({"stack": {"release": "25.11"}})")).empty());
  CHECK(refused_at(patched(dense, R"({"stack": {"release": "25.09"}})")) == "training.precision");
  // Paged stashing with 26.06.
  const Json paged = patched(base, R"({"framework": {"moe_expert_rank_capacity_factor": 1.5}})");
  CHECK(refused_at(patched(paged, R"({"stack": {"release": "26.04.01"}})")) ==
        "framework.moe_expert_rank_capacity_factor");
  CHECK(refused_at(patched(paged, R"({"stack": {"release": "26.06"}})")).empty());
}

TEST_CASE(
    "The launcher's node-0 binding on old GB200 and GB300 releases is priced as bound and said",
    "[config][releases]") {
  // The default scenario: GB200, MXFP8, HybridEP, router and preprocess graphs. NeMo 2.3.0
  // (25.04) bound every rank with SLURM_LOCALID/4: all four of a tray on node 0.
  // DeepEP's tuning, unsettled in 25.04 too, is given, so that only the binding is said.
  const Json base = patched(test::default_scenario_json(),
                            R"({"framework": {"dispatcher": "deepep", "dispatcher_sms": 24,
                                               "cuda_graph_scope": []},
                                "stack": {"deepep_tuned": true}})");
  const auto old = load(patched(base, R"({"stack": {"release": "25.04"}})"));
  CHECK(old.stack.cpu_numa_binding);
  const auto notes = config::release_warnings(old);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("stack.cpu_numa_binding") && Catch::Contains("node 0") &&
                           Catch::Contains("not priced"));
  // From 25.07 (divisor 2) it is not said; nor where the scenario gives the switch.
  CHECK(
      config::release_warnings(load(patched(base, R"({"stack": {"release": "25.07"}})"))).empty());
  CHECK(config::release_warnings(
            load(patched(base, R"({"stack": {"release": "25.04", "cpu_numa_binding": true}})")))
            .empty());
  // Priced as bound: the step equals the same release with the switch given true, and an
  // unbound process pays host.numa_unbound_factor.
  const auto step = [&](const char* patch) {
    return predict::predict(load(patched(base, patch))).step.step_time_s;
  };
  CHECK(step(R"({"stack": {"release": "25.04"}})") ==
        Approx(step(R"({"stack": {"release": "25.04", "cpu_numa_binding": true}})")));
  CHECK(step(R"({"stack": {"release": "25.04"}})") <
        step(R"({"stack": {"release": "25.04", "cpu_numa_binding": false}})"));
}

TEST_CASE("Unknown releases and an incomplete custom stack are refused with what to give",
          "[config][releases]") {
  const Json base = test::default_scenario_json();
  {
    test::TempFile f(patched(base, R"({"stack": {"release": "25.05"}})").dump());
    const auto r = test::run_moesim({"run", f.path()});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("stack.release") &&
                          Catch::Contains("unknown release '25.05'") &&
                          Catch::Contains("26.04.01"));
  }
  {
    test::TempFile f(
        patched(base, R"({"stack": {"release": "custom", "pdl_quant": false}})").dump());
    const auto r = test::run_moesim({"run", f.path()});
    CHECK(r.status == 2);
    // MXFP8 on GB200 with HybridEP and router graphs: these act; pdl_quant was given, and
    // DeepEP's tuning and the slim TE host code act not here.
    CHECK_THAT(r.err, Catch::Contains("stack.norm_quant_fusion") &&
                          Catch::Contains("stack.hybridep_permute_fusion"));
    CHECK_THAT(r.err, !Catch::Contains("stack.pdl_quant") &&
                          !Catch::Contains("stack.deepep_tuned") &&
                          !Catch::Contains("stack.te_host_slim"));
  }
  // The journey's steps are custom builds with every switch given.
  CHECK(load(config::Json::parse(
                 test::read_text(test::source_path("scenarios/journey/13-norm-quant-fusion.json"))))
            .release == "custom");
}

TEST_CASE("run names a release's unsettled switch where it acts", "[config][releases]") {
  // A system whose DeepEP tuning gains something (the shipped GB200's corpus fit leaves it
  // 1, where the switch acts not and no note is printed).
  const Json deepep =
      patched(test::default_scenario_json(),
              R"({"system": {"base": "gb200-nvl72", "ep_dispatch": {"deepep_tuned_factor": 1.1}},
          "framework": {"dispatcher": "deepep", "dispatcher_sms": 24}, "stack": {"release": "26.02"}})");
  test::TempFile f(deepep.dump());
  const auto r = test::run_moesim({"run", f.path()});
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("release 26.02:") && Catch::Contains("stack.deepep_tuned"));
  const auto j = Json::parse(test::run_moesim({"run", "--json", f.path()}).out);
  CHECK(j["release"]["name"] == "26.02");
  CHECK(j["release"]["notes"].size() == 1);
  // Under HybridEP DeepEP's tuning acts not: no note.
  test::TempFile h(
      patched(test::default_scenario_json(), R"({"stack": {"release": "26.02"}})").dump());
  CHECK(Json::parse(test::run_moesim({"run", "--json", h.path()}).out)["release"]["notes"].empty());
}

TEST_CASE("A release slows what its missing switches slow", "[config][releases]") {
  // 25.11 lacks 26.02's cuDNN norm-quantize fusion; the newest stack adds PDL quantization.
  const Json base = test::default_scenario_json();
  const auto step = [&](const char* patch) {
    test::TempFile f(patched(base, patch).dump());
    const auto r = test::run_moesim({"run", "--json", f.path()});
    REQUIRE(r.status == 0);
    return Json::parse(r.out)["step_time_s"].get<double>();
  };
  const double newest = step("{}");
  const double r2602 = step(R"({"stack": {"release": "26.02"}})");
  const double r2511 = step(R"({"stack": {"release": "25.11"}})");
  CHECK(newest < r2602);
  CHECK(r2602 < r2511);
}

TEST_CASE("run names MLA's down-projections and latent norms where a release ran them otherwise",
          "[config][releases]") {
  // Moonlight at TP2 on Megatron-Bridge 26.08 (Megatron-Core 0.19): priced as it ran.
  const Json base = Json::parse(test::read_text(
      test::source_path("scenarios/recompute/moonlight-h100-recompute-mla-up-proj.json")));
  const auto has = [](const std::vector<std::string>& notes, const char* what) {
    return std::ranges::any_of(notes, [&](const std::string& n) { return n.find(what) != n.npos; });
  };
  const auto now = config::release_warnings(load(base));
  CHECK_FALSE(has(now, "parallelism.tp"));
  // Megatron-Core 0.16 and after keep the latent norms out of the up-projections' recompute.
  CHECK(has(now, "framework.recompute_modules[mla_up_proj]"));
  // 25.07 (Megatron-Core 0.13) ran the down-projections column-parallel, and recomputed the
  // norms as priced.
  const auto old = config::release_warnings(
      load(patched(base, R"({"stack": {"release": "25.07", "cpu_numa_binding": true}})")));
  CHECK(has(old, "parallelism.tp"));
  CHECK_FALSE(has(old, "framework.recompute_modules[mla_up_proj]"));
  // At TP1, or without the up-projections' recompute, neither is said.
  const Json tp1 = patched(base, R"({"parallelism": {"tp": 1, "sequence_parallel": false},
                                     "training": {"global_batch_size": 8}})");
  CHECK_FALSE(has(config::release_warnings(load(tp1)), "parallelism.tp"));
  CHECK(config::release_warnings(load(patched(base, R"({"framework": {"recompute_modules": []}})")))
            .empty());
}
