// config/load_scenario_sections.cpp: the ScenarioReader's (config/load_scenario_detail.hpp)
// self-contained sections of a scenario file: training, routing (and its histogram file),
// recorded, measured, goodput and cost.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/inert_settings.hpp"
#include "config/load.hpp"
#include "config/load_scenario_detail.hpp"
#include "config/routing_profile.hpp"
#include "config/storage.hpp"

namespace moesim::config::detail {

void ScenarioReader::training(const Node& n) {
  auto& t = sc_.training;
  read_object(n, [&](Object& o) {
    t.seq_length = o.req("seq_length").as_int(1, std::int64_t{1} << 22);
    t.micro_batch_size = o.req("micro_batch_size").as_int(1, std::int64_t{1} << 16);
    t.global_batch_size = o.req("global_batch_size").as_int(1, std::int64_t{1} << 30);
    if (auto p = o.get("precision"))
      t.precision = p->as_enum(workload::precision_names(), "precision");
    t.mtp_layers = o.int_or("mtp_layers", 0, 0, 16);
    if (t.mtp_layers > 0 && sc_.model.hybrid() && sc_.model.mtp_pattern.empty())
      o.get("mtp_layers")
          ->fail(fmt::format("model '{}' is hybrid without an MTP block: give its "
                             "mtp_hybrid_override_pattern",
                             sc_.model.name));
    // DeepSeek-V4's compress_ratios name each MTP layer's attention.
    if (const auto& m = sc_.model; m.is_dsv4() && t.mtp_layers > m.native_mtp_layers)
      o.get("mtp_layers")
          ->fail(fmt::format("model '{}' gives compress ratios for {} MTP layers", m.name,
                             m.native_mtp_layers));
    // BF16 first and last layers (workload::Training::bf16_layers_at_start); Megatron's own
    // checks (transformer_config.py 1398-1430 at cd4afffa) are in the parallelism section.
    for (const auto& [k, field] : {std::pair{"bf16_layers_at_start", &t.bf16_layers_at_start},
                                   std::pair{"bf16_layers_at_end", &t.bf16_layers_at_end}}) {
      const auto c = o.get(k);
      if (!c) continue;
      *field = c->as_int(0, sc_.model.num_layers);
      if (*field == 0) continue;
      if (!workload::quantized(t.precision))
        c->fail("training.precision is bf16: every layer runs in BF16 already");
      if (t.precision == workload::Precision::fp8_delayed)
        c->fail(
            "Megatron-Core refuses BF16 first/last layers with delayed scaling "
            "(transformer_config.py 1400-1403 at cd4afffa)");
      // A hybrid model's layers are its pattern's symbols, each one layer for the range
      // (Megatron-Core's hybrid block asks get_fp4_context / get_fp8_context with each
      // layer's number, fp4_utils.py at d7288711 122-138); its MTP block keeps its spec in
      // BF16 (keep_mtp_spec_in_bf16), so its precision is known either way.
      if (t.mtp_layers > 0 && !(sc_.model.hybrid() && sc_.model.mtp_bf16))
        c->fail(
            "with MTP layers: which precision Megatron's MTP layers take under the BF16 range is "
            "not modeled");
    }
    if (auto mp = o.get("module_precision")) module_precision(*mp);
    t.hidden_dropout = o.number_or("hidden_dropout", 0, 0, 0.99);
    t.vocab_divisor = o.int_or("make_vocab_size_divisible_by", 128, 1, std::int64_t{1} << 20);
    if (auto n4 = o.get("nvfp4")) {
      if (t.precision != workload::Precision::nvfp4) n4->fail("needs training.precision nvfp4");
      read_object(*n4, [&](Object& r) {
        t.nvfp4.rht = r.bool_or("rht", true);
        t.nvfp4.stochastic_rounding = r.bool_or("stochastic_rounding", true);
        if (auto w = r.get("weight_2d"))
          w->fail(
              "2D (16x16) weight scales change numerics, not time: TransformerEngine quantizes a "
              "weight once "
              "per step and its 2D cast moves the bytes of the 1D one, so moesim takes no "
              "setting for it");
      });
    }
    if (auto l = o.get("lora")) lora(*l);
    if (auto td = o.get("token_drop"))
      read_object(*td, [&](Object& d) {
        t.capacity_factor = d.req("capacity_factor").as_number(0.01, 1000);
        t.pad_to_capacity = d.bool_or("pad", false);
      });
  });
  const auto dtype = workload::gemm_dtype(t.precision);
  if (!sc_.system.gpu.supports(dtype)) {
    std::vector<std::string_view> have;
    for (const auto& [d, p] : sc_.system.gpu.dense_tflops)
      have.push_back(hw_models::dtype_names().name(d));
    fail("training.precision",
         fmt::format("{} needs {} Tensor Core support, which {} ({}) does not have; its "
                     "dense peaks are for: {}",
                     workload::precision_names().name(t.precision),
                     hw_models::dtype_names().name(dtype), sc_.system.gpu.name,
                     hw_models::gpu_arch_names().name(sc_.system.gpu.arch), fmt::join(have, ", ")));
  }
}

// training.module_precision (workload::Training::module_precision): a module's own
// precision under an FP8/FP4 recipe, as Megatron-Core's quant_recipe gives it (BF16, or
// MXFP8 under NVFP4 as Megatron-Bridge's te_quant.cfg runs the Mamba out_proj), where the
// model has the module.
void ScenarioReader::module_precision(const Node& n) {
  auto& t = sc_.training;
  const auto& m = sc_.model;
  if (!workload::quantized(t.precision))
    n.fail("training.precision is not FP8/FP4: every module runs in it already");
  read_object(n, [&](Object& o) {
    for (const auto& e : workload::quant_module_names().entries()) {
      const auto v = o.get(e.name);
      if (!v) continue;
      const auto p = v->as_enum(workload::precision_names(), "precision");
      if (p != workload::Precision::bf16 &&
          !(p == workload::Precision::mxfp8 && t.precision == workload::Precision::nvfp4))
        v->fail(fmt::format(
            "a module takes bf16, or mxfp8 under nvfp4 (Megatron-Bridge's "
            "te_quant.cfg), not {} under {}",
            workload::precision_names().name(p), workload::precision_names().name(t.precision)));
      if (!sc_.system.gpu.supports(workload::gemm_dtype(p)))
        v->fail(fmt::format("{} has no {} Tensor Core peak", sc_.system.gpu.name,
                            workload::precision_names().name(p)));
      std::optional<std::string> missing;
      switch (e.value) {
        case workload::QuantModule::attention:
          if (m.attention != workload::AttentionKind::gqa ||
              (m.hybrid() ? m.count_hybrid(workload::HybridLayer::attention) == 0
                          : m.num_linear_layers() == m.num_layers))
            missing = "GQA attention layers (the QKV and output projections moesim builds)";
          break;
        case workload::QuantModule::mamba_out_proj:
          if (m.count_hybrid(workload::HybridLayer::mamba) == 0) missing = "Mamba mixers";
          break;
        case workload::QuantModule::latent_projections:
          if (m.moe_latent_size <= 0) missing = "LatentMoE projections";
          break;
      }
      if (missing) v->fail(fmt::format("model '{}' has no {}", m.name, *missing));
      t.module_precision[static_cast<std::size_t>(e.value)] = p;
    }
  });
}

// training.lora (workload::Lora): the adapters moesim prices, on the models it prices them for.
void ScenarioReader::lora(const Node& n) {
  const auto& m = sc_.model;
  auto& l = sc_.training.lora.emplace();
  read_object(n, [&](Object& o) {
    l.rank = o.int_or("rank", 16, 1, 65536);
    if (auto a = o.get("alpha"))
      a->fail(
          "the adapters' scale (alpha / rank) changes numerics, not time: the scale kernel runs "
          "whatever its value, so moesim takes no setting for it");
    if (auto t = o.get("targets")) {
      l.targets = t->as_enum_list(workload::lora_target_names(), "LoRA target");
      if (l.targets.empty()) t->fail("name at least one target linear");
      for (const auto row : {workload::LoraTarget::linear_proj, workload::LoraTarget::linear_fc2})
        if (l.targets_has(row))
          t->fail(fmt::format(
              "{}: a row-parallel target's adapter (Megatron-Bridge ParallelLinearAdapter: an "
              "all-reduce of the low-rank output over TP, then a gather of the whole output) is "
              "not modeled; column-parallel targets are: linear_qkv, linear_fc1",
              workload::lora_target_names().name(row)));
      if (l.targets_has(workload::LoraTarget::linear_fc1) &&
          std::any_of(m.moe_layer.begin(), m.moe_layer.end(), [](bool b) { return b; }))
        t->fail(
            fmt::format("linear_fc1 on model '{}': the adapters of its routed and shared "
                        "experts (shared, grouped or per-expert) are not modeled",
                        m.name));
    }
  });
  if (m.attention != workload::AttentionKind::gqa || m.hybrid() || !m.linear_layer.empty())
    n.fail(
        fmt::format("model '{}': moesim prices LoRA on models whose every layer has "
                    "attention with one linear_qkv (MLA, Mamba and Gated DeltaNet mixers' "
                    "adapters are not modeled)",
                    m.name));
}

// A routing histogram file (config::read_expert_loads): every row one MoE layer's counts,
// cycled over the model's MoE layers.
void ScenarioReader::read_histogram(workload::Routing& r) {
  r.histogram = read_expert_loads(r.histogram_path, sc_.model.num_experts);
}

void ScenarioReader::routing(const std::optional<Node>& n) {
  // No routing block: the routing the model family is trained with (workload::trained_routing;
  // `run` names it among its assumptions).
  if (!n) {
    sc_.routing = workload::trained_routing(sc_.model).routing;
    global_batch_routing();
    return;
  }
  auto& r = sc_.routing;
  read_object(*n, [&](Object& o) {
    r.balance = o.req("balance").as_enum(workload::routing_balance_names(), "routing balance");
    // A trained router's popularity dispersion (aux_loss, loss_free); under another balance
    // the key is not one the object knows, said with the reason.
    if (r.trained()) {
      if (auto v = o.get("popularity_sigma")) r.popularity_sigma = v->as_number(0.0, 3.0);
    } else if (o.has("popularity_sigma")) {
      o.node()
          .child_at(o.node().json()["popularity_sigma"], "popularity_sigma")
          .fail(
              "the lognormal dispersion of a trained router's expert popularity: it applies to "
              "balance aux_loss or loss_free");
    }
    switch (r.balance) {
      case workload::RoutingBalance::forced:
        break;
      case workload::RoutingBalance::sampled:
        if (auto d = o.get("distribution"))
          r.distribution = d->as_enum(workload::routing_distribution_names(), "distribution");
        r.alpha = o.number_or("alpha", 1.0, 0.0, 100.0);
        r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
        break;
      case workload::RoutingBalance::aux_loss:
        r.aux_loss_coefficient = o.req("coefficient").as_number(1e-6, 1.0);
        r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
        break;
      case workload::RoutingBalance::loss_free:
        r.seed = static_cast<std::uint64_t>(o.int_or("seed", 0, 0, INT64_MAX));
        break;
      case workload::RoutingBalance::histogram: {
        const Node p = o.req("path");
        const std::filesystem::path rel = p.as_string();
        const auto base = std::filesystem::path(*file_).parent_path();
        r.histogram_path = (rel.is_absolute() ? rel : base / rel).string();
        if (const auto problem = input_file_problem(r.histogram_path))
          p.fail(fmt::format("histogram file '{}' {}", r.histogram_path, *problem));
        read_histogram(r);
        break;
      }
    }
  });
  global_batch_routing();
}

// A family whose router was pretrained with global-batch balance (workload::TrainedRouting::
// global_batch) routes trained with the popularity sigma fitted to measured pairs
// (config/routing_profile.hpp), unless the file gives its own or the model is read
// uncalibrated (then the published statistic's, as for any family).
void ScenarioReader::global_batch_routing() {
  auto& r = sc_.routing;
  if (r.trained() && !r.popularity_sigma && opts_.calibrated && sc_.model.is_moe() &&
      workload::trained_routing(sc_.model).global_batch)
    r.popularity_sigma = global_batch_sigma().value;
}

// `recorded` (config/inert_settings.hpp record_inert_settings): who wrote the file and
// which of its settings, written as the source gave them, change nothing here.
void ScenarioReader::recorded(const std::optional<Node>& n) {
  if (!n) return;
  read_object(*n, [&](Object& o) {
    const Node by = o.req("by");
    sc_.recorded_by = by.as_string();
    if (sc_.recorded_by.empty()) by.fail("name the tool that wrote the settings");
    const auto& reg = performance_settings();
    o.req("inert").for_each_element([&](const Node& e) {
      const std::string name = e.as_string();
      if (std::none_of(reg.begin(), reg.end(),
                       [&](const PerformanceSetting& s) { return s.name == name; }))
        e.fail(fmt::format(
            "'{}' is not a performance setting (list elements as \"framework.offload[moe_act]\")",
            name));
      sc_.recorded_inert.push_back(name);
    });
  });
}

void ScenarioReader::measured(const std::optional<Node>& n) {
  if (!n) return;
  Measured m;
  read_object(*n, [&](Object& o) {
    int given = 0;
    for (const auto& e : measured_metric_names().entries()) {
      if (auto v = o.get(e.name)) {
        ++given;
        m.metric = e.value;
        m.value = v->as_number(1e-12, 1e18);
      }
    }
    if (given != 1)
      n->fail(
          fmt::format("give exactly one measured metric of: {}", measured_metric_names().known()));
    const Node src = o.req("source");
    m.source = src.as_string();
    if (m.source.empty()) src.fail("the source of a measurement must be named");
    m.tolerance_pct =
        o.number_or("tolerance_pct", 5.0, 0.001, 1000.0);  // over-predictions can exceed 100%
    m.in_sample = o.string_or("in_sample", "");
    m.series = o.string_or("series", "");
    m.held_out = o.string_or("held_out", "");
    m.family = o.string_or("family", "");
    const bool memory = m.metric == MeasuredMetric::peak_memory_gib;
    for (const char* k : {"family", "compare_with"})
      if (const auto v = o.get(k); v && memory)
        v->fail("pairs and families compare step times or throughputs, not memory");
    if (const auto v = o.get("compare_with")) {
      v->for_each_element([&](const Node& e) {
        MeasuredPair p;
        read_object(e, [&](Object& po) {
          const Node run = po.req("run");
          p.run = run.as_string();
          if (p.run.empty()) run.fail("name the run this one is compared with");
          if (p.run == sc_.name) run.fail("a run cannot be compared with itself");
          p.decision = po.req("decision").as_enum(decision_names(), "decision");
          p.tolerance_pct = po.number_or("tolerance_pct", 5.0, 0.001, 1000.0);
          p.source = po.string_or("source", "");
        });
        m.compare_with.push_back(std::move(p));
      });
    }
    for (const char* k : {"memory_counter", "pp_rank"})
      if (const auto v = o.get(k); v && !memory) v->fail("only with measured.peak_memory_gib");
    // Which counter: required, as the two differ by the allocator's reserve (13-26% on
    // the published pairs) and moesim's default allowance is 0.
    if (memory)
      m.memory_counter = o.req("memory_counter").as_enum(memory_counter_names(), "memory counter");
    if (const auto v = o.get("pp_rank")) m.pp_rank = v->as_int(0, sc_.parallelism.pp - 1);
  });
  sc_.measured = m;
}

// goodput (config/storage.hpp for the defaults and the storage presets).
void ScenarioReader::goodput(const std::optional<Node>& n) {
  auto& g = sc_.goodput;
  g = default_goodput();
  if (!n) return;
  read_object(*n, [&](Object& o) {
    g.interruptions_per_gpu_day =
        o.number_or("interruptions_per_gpu_day", g.interruptions_per_gpu_day, 0, 1);
    g.planned_interruptions_per_gpu_day =
        o.number_or("planned_interruptions_per_gpu_day", g.planned_interruptions_per_gpu_day, 0, 1);
    g.restart_s = o.number_or("restart_s", g.restart_s, 0, 30 * 86400.0);
    g.async_save = o.bool_or("async_save", g.async_save);
    if (auto v = o.get("checkpoint_interval_s"))
      g.checkpoint_interval_s = v->as_number(1e-3, 365 * 86400.0);
    if (auto v = o.get("token_budget")) g.token_budget = v->as_number(1, 1e30);
    if (auto st = o.get("storage")) {
      if (st->json().is_string()) {
        const auto p = storage_preset(st->as_string());
        if (!p)
          st->fail(fmt::format("unknown storage '{}'; known: {}", st->as_string(),
                               known_storage_names()));
        g.storage = *p;
      } else {
        StorageSpec s{"inline", 0, 0, 0, "given in the scenario"};
        read_object(*st, [&](Object& so) {
          s.write_GBps = so.req("write_GBps").as_number(1e-6, 1e9);
          s.read_GBps = so.req("read_GBps").as_number(1e-6, 1e9);
          s.client_GBps = so.number_or("client_GBps", 0, 0, 1e9);
          s.source = so.string_or("source", s.source);
        });
        g.storage = s;
      }
    }
  });
}

void ScenarioReader::cost(const std::optional<Node>& n) {
  if (!n) return;
  auto& c = sc_.cost;
  read_object(*n, [&](Object& o) {
    if (auto v = o.get("node_power_kW")) c.node_power_kW = v->as_number(0.01, 100000);
    if (auto v = o.get("pue")) c.pue = v->as_number(1, 10);
    if (auto v = o.get("gpu_hour_usd")) c.gpu_hour_usd = v->as_number(0, 1e6);
  });
}

}  // namespace moesim::config::detail
