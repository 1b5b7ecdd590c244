#include <catch2/catch.hpp>

#include <filesystem>

#include "config/caveats.hpp"
#include "config/load.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {
void check_sourced(const hw_models::Param& p, const std::string& what) {
  INFO(what);
  CHECK(p.value > 0);
  CHECK_FALSE(p.source.empty());
  CHECK(p.source.rfind("given inline", 0) != 0);  // presets cite, never bare numbers
}
}  // namespace

TEST_CASE("The contract's system presets load and every number names its source",
          "[config][presets]") {
  const std::vector<std::string> expected = {"b200", "b300",       "gb200-nvl72", "gb300-nvl72",
                                             "h100", "h20",        "h200",        "h800",
                                             "r100", "vr200-nvl72"};
  CHECK(config::preset_names(config::PresetKind::system) == expected);
  for (const auto& name : expected) {
    INFO(name);
    const auto s = config::load_system_preset(name);
    CHECK(s.name == name);
    check_sourced(s.gpu.sm_count, "sm_count");
    if (s.gpu.clock_mhz) check_sourced(*s.gpu.clock_mhz, "clock");
    if (s.gpu.l2_MB) check_sourced(*s.gpu.l2_MB, "l2");
    check_sourced(s.gpu.hbm_GB, "hbm");
    check_sourced(s.gpu.usable_GiB, "usable");
    // The datasheet's "GB" are the stacks' binary capacity (an H100's 80 GB: nvidia-smi's
    // 81,559 MiB); CUDA reports that less the driver's reservation, a few percent at most.
    CHECK(s.gpu.usable_GiB.value < s.gpu.hbm_GB.value);
    CHECK(s.gpu.usable_GiB.value > 0.95 * s.gpu.hbm_GB.value);
    check_sourced(s.gpu.hbm_TBps, "hbm bw");
    for (const auto& [d, p] : s.gpu.dense_tflops) check_sourced(p, "peak");
    check_sourced(s.node.gpus_per_node, "gpus_per_node");
    check_sourced(s.node.cpus_per_node, "cpus");
    check_sourced(s.node.cpu_cores, "cores");
    check_sourced(s.node.host_link_GBps, "host link");
    check_sourced(s.nvlink.domain_gpus, "domain");
    check_sourced(s.nvlink.bw_GBps, "nvlink bw");
    check_sourced(s.network.nic_Gbps, "nic");
    check_sourced(s.network.nics_per_gpu, "nics");
    check_sourced(s.network.planes, "planes");
  }
}

TEST_CASE("System presets carry the reference figures", "[config][presets]") {
  const auto h800 = config::load_system_preset("h800");
  CHECK(h800.gpu.peak_tflops(hw_models::Dtype::bf16) == 989);
  CHECK(h800.gpu.peak_tflops(hw_models::Dtype::fp8) == 1979);
  CHECK_FALSE(h800.gpu.supports(hw_models::Dtype::mxfp8));
  CHECK(h800.nvlink.usable_GBps->value == 160);
  CHECK(h800.network.planes.value == 8);
  const auto gb200 = config::load_system_preset("gb200-nvl72");
  CHECK(gb200.gpu.peak_tflops(hw_models::Dtype::mxfp8) == 5000);
  CHECK(gb200.gpu.sm_count.value == 148);
  CHECK(gb200.nvlink.domain_gpus.value == 72);
  CHECK(gb200.node.gpus_per_node.value == 4);
  // A dense MXFP8 GEMM runs at FP8's efficiency x 6.812 / 7.161: FP8 current scaling against
  // MXFP8, one layer's GEMMs pre-quantized on a B300 (TransformerEngine's GEMM profiling guide),
  // on every Blackwell preset.
  for (const char* name : {"gb200-nvl72", "gb300-nvl72", "b200", "b300", "r100", "vr200-nvl72"}) {
    const auto s = config::load_system_preset(name, {false});
    CHECK(s.efficiency.gemm.at(hw_models::Dtype::mxfp8).value ==
          Approx(s.efficiency.gemm.at(hw_models::Dtype::fp8).value * 6.812 / 7.161).margin(1e-4));
  }
  // Peak = SMs x FLOPs/clock/SM x clock: 132 x 4096 x 1.83 GHz = 989.4 TFLOPS (sm90).
  const auto h100 = config::load_system_preset("h100");
  CHECK(h100.gpu.sm_count.value * 4096 * h100.gpu.clock_mhz->value * 1e6 / 1e12 ==
        Approx(h100.gpu.peak_tflops(hw_models::Dtype::bf16)).epsilon(0.001));
}

TEST_CASE("The contract's model presets load with their sources", "[config][presets]") {
  const std::vector<std::string> expected = {"deepseek-v2",
                                             "deepseek-v3",
                                             "deepseek-v4-flash",
                                             "deepseek-v4-pro",
                                             "gpt-oss-120b",
                                             "gpt-oss-20b",
                                             "gpt3-175b",
                                             "kimi-k2",
                                             "llama3-70b",
                                             "llama3.1-405b",
                                             "mixtral-8x22b",
                                             "mixtral-8x7b",
                                             "moonlight-16b-a3b",
                                             "nemotron-3-nano",
                                             "nemotron-3-super",
                                             "nemotron-3-ultra",
                                             "nemotron-3.5-lightning",
                                             "nemotronh-56b",
                                             "qwen3-235b-a22b",
                                             "qwen3-30b-a3b",
                                             "qwen3-next-80b-a3b",
                                             "qwen3.5-122b-a10b",
                                             "qwen3.5-35b-a3b",
                                             "qwen3.5-397b-a17b"};
  CHECK(config::preset_names(config::PresetKind::model) == expected);
  for (const auto& name : expected) {
    INFO(name);
    const auto m = config::load_model_preset(name);
    CHECK_FALSE(m.source.empty());
    CHECK(m.moe_layer.size() == static_cast<std::size_t>(m.num_layers));
  }
  const auto v3 = config::load_model_preset("deepseek-v3");
  CHECK(v3.num_dense_layers() == 3);
  CHECK(v3.num_moe_layers() == 58);
  CHECK(v3.attention == workload::AttentionKind::mla);
  CHECK(v3.shared_expert_ffn_hidden_size == 2048);
  CHECK(v3.native_mtp_layers == 1);
  const auto mix = config::load_model_preset("mixtral-8x7b");
  CHECK(mix.moe_ffn_hidden_size == 14336);
  CHECK(mix.num_dense_layers() == 0);
  CHECK(config::load_model_preset("llama3-70b").is_moe() == false);
  CHECK(config::load_model_preset("qwen3-30b-a3b").qk_layernorm);
  // Moonlight-16B-A3B (Megatron-Bridge v0.3.0 MoonlightModelProvider16B): one dense layer,
  // MLA without the query down-projection, two shared experts of 1408.
  const auto moon = config::load_model_preset("moonlight-16b-a3b");
  CHECK(moon.num_dense_layers() == 1);
  CHECK(moon.num_moe_layers() == 26);
  CHECK(moon.attention == workload::AttentionKind::mla);
  CHECK(moon.mla.q_lora_rank == 0);  // no query down-projection
  CHECK(moon.shared_expert_ffn_hidden_size == 2816);
}

TEST_CASE("Preset files on disk are the ones compiled in", "[config][presets]") {
  for (const char* kind : {"systems", "models"}) {
    std::size_t files = 0;
    for (const auto& e :
         std::filesystem::directory_iterator(test::source_path(std::string("scenarios/") + kind)))
      files += e.path().extension() == ".json";
    CHECK(files == config::preset_names(std::string(kind) == "systems" ? config::PresetKind::system
                                                                       : config::PresetKind::model)
                       .size());
  }
}

TEST_CASE("Unknown presets list the known ones", "[config][presets]") {
  CHECK_THROWS_WITH(config::load_system_preset("gb200"),
                    Catch::Contains("known: b200, b300, gb200-nvl72"));
}

TEST_CASE("A system cache returns what loading without it gives, per system block and file",
          "[config][presets]") {
  // The default scenario, then the same with its NVLink bandwidth doubled inline, then
  // uncalibrated: each through one cache and without it. A key that missed the block's
  // text or the calibration would hand the second or third the first's system.
  const auto base = test::default_scenario_json();
  const auto doubled =
      test::patched(base, R"({"system": {"base": "gb200-nvl72", "nvlink": {"bw_GBps": 1800}}})");
  config::SystemCache cache;
  for (const auto& [json, calibrated] :
       {std::pair{base, true}, std::pair{doubled, true}, std::pair{base, false}}) {
    config::LoadOptions plain{calibrated};
    config::LoadOptions cached{calibrated};
    cached.systems = &cache;
    for (int pass = 0; pass < 2; ++pass) {  // a miss, then a hit
      const auto a = config::load_scenario_json(json, "test.json", plain);
      const auto b = config::load_scenario_json(json, "test.json", cached);
      CHECK(b.system.nvlink.bw_GBps.value == a.system.nvlink.bw_GBps.value);
      CHECK(b.system.host.op_us.value == a.system.host.op_us.value);
      CHECK(b.system.profiles == a.system.profiles);
    }
  }
  const auto d =
      config::load_scenario_json(doubled, "test.json", config::LoadOptions{true, 0, &cache});
  CHECK(d.system.nvlink.bw_GBps.value == 1800);
}

TEST_CASE("An announced system says so in describe and in every prediction on it",
          "[config][presets]") {
  const auto vr = config::load_system_preset("vr200-nvl72");
  CHECK(vr.status == hw_models::SystemStatus::announced);
  CHECK_THAT(vr.status_source, Catch::Contains("announced"));
  CHECK(vr.nvlink.domain_gpus.value == 72);
  CHECK(vr.node.gpus_per_node.value == 4);
  const auto b300 = config::load_system_preset("b300");
  CHECK(b300.status == hw_models::SystemStatus::shipping);
  CHECK(b300.network.nic_Gbps.value == 800);  // ConnectX-8: 800 Gb/s a GPU, not 1.6 Tb/s
  CHECK(config::load_system_preset("gb300-nvl72").status == hw_models::SystemStatus::shipping);
  CHECK_THROWS_WITH(config::load_system_preset("vr200-nvl144"),
                    Catch::Contains("is called 'vr200-nvl72'"));
  // Bridge's r100: the same Rubin GPU alone in a node, its host and network assumed.
  const auto r100 = config::load_system_preset("r100");
  CHECK(r100.status == hw_models::SystemStatus::announced);
  CHECK(r100.node.gpus_per_node.value == 1);
  CHECK(r100.nvlink.domain_gpus.value == 1);
  CHECK(r100.gpu.dense_tflops.at(hw_models::Dtype::bf16).value ==
        vr.gpu.dense_tflops.at(hw_models::Dtype::bf16).value);
  CHECK_THAT(r100.node.cpus_per_node.source, Catch::Contains("assumed"));

  auto j = test::default_scenario_json();
  j["system"] = "vr200-nvl72";
  const auto sc = config::load_scenario_json(j, "vr.json");
  const auto caveats = config::prediction_caveats(sc);
  REQUIRE_FALSE(caveats.empty());
  CHECK_THAT(caveats.front(), Catch::Contains("vr200-nvl72 is announced hardware"));
  j["system"] = "b300";
  j.erase("placement");  // the GB200 default packs 32 GPUs a domain; an HGX B300 has 8
  CHECK(config::prediction_caveats(config::load_scenario_json(j, "b300.json")).empty());

  // The status is one of the names, and its source one of the system's sources.
  j["system"] = {{"base", "b300"},
                 {"status", {{"value", "rumoured"}, {"source", "preset-status"}}}};
  CHECK_THROWS_WITH(config::load_scenario_json(j, "x.json"), Catch::Contains("rumoured"));
  j["system"] = {{"base", "b300"}, {"status", {{"value", "announced"}, {"source", "nowhere"}}}};
  CHECK_THROWS_WITH(config::load_scenario_json(j, "x.json"),
                    Catch::Contains("unknown source id 'nowhere'"));
}

TEST_CASE("A system's ring-group table: a patch changes a size, a bad key or value is refused",
          "[config][presets]") {
  const auto base = test::default_scenario_json();
  const auto with = [&](const char* table) {
    return test::patched(base, std::string(R"({"system": {"base": "gb200-nvl72", "comm": )") +
                                   R"({"ring_group_efficiency": )" + table + "}}}");
  };
  const auto sc = config::load_scenario_json(with(R"({"2": 0.5})"), "test.json");
  CHECK(sc.system.comm.ring_group_efficiency.at(2).value == 0.5);
  CHECK(sc.system.comm.ring_group_efficiency.at(4).value == Approx(0.9337));  // the base's
  CHECK(sc.system.comm.ring_group_factor(2) == 0.5);
  for (const char* bad :
       {R"({"two": 0.5})", R"({"1": 0.5})", R"({"02": 0.5})", R"({"2": 3})", R"([0.5])"}) {
    INFO(bad);
    CHECK_THROWS_AS(config::load_scenario_json(with(bad), "test.json"), config::InputError);
  }
  try {
    config::load_scenario_json(with(R"({"two": 0.5})"), "test.json");
  } catch (const config::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("ring_group_efficiency") && Catch::Contains("group size"));
  }
}

TEST_CASE("A system preset loaded by name takes --set's values as a scenario's system does",
          "[config][presets]") {
  config::LoadOptions opts;
  opts.system_set = {config::parse_system_set("host.op_us=7.5")};
  const auto s = config::load_system_preset("h800", opts);
  CHECK(s.host.op_us.value == 7.5);
  REQUIRE(s.set_on_command_line.size() == 1);
  CHECK_THAT(s.set_on_command_line[0], Catch::StartsWith("host.op_us = 7.5 (was "));
  CHECK(config::load_system_preset("h800").host.op_us.value != 7.5);
  opts.system_set = {config::parse_system_set("host.nope=1")};
  CHECK_THROWS_AS(config::load_system_preset("h800", opts), config::InputError);
}
