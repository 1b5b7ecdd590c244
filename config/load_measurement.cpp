#include "config/load_measurement.hpp"

#include "config/json_reader.hpp"

namespace moesim::config {
namespace {

constexpr double kBig = 1e18;

// A GEMM point's input type: the ones the fitters know.
std::string gemm_dtype(Object& o) {
  std::string d = o.req("dtype").as_string();
  if (d != "bf16" && d != "fp8" && d != "mxfp8")
    o.req("dtype").fail("unknown GEMM dtype '" + d + "'; known: bf16, fp8, mxfp8");
  return d;
}

calibration::GemmPoint gemm_point(const Node& n, bool grouped) {
  calibration::GemmPoint g;
  read_object(n, [&](Object& o) {
    g.dtype = gemm_dtype(o);
    // A grouped point may leave out its groups and rows per group where the source does
    // not give them (0: unknown; the fitter then takes wave quantization as 1).
    // A dense point may be a batched GEMM (`batch` independent GEMMs of one shape in one
    // call, as XLA's tables time them): its tiles count as a grouped GEMM's do.
    g.groups = grouped ? o.int_or("groups", 0, 1, 1 << 20) : o.int_or("batch", 1, 1, 1 << 20);
    g.m = grouped ? o.int_or("m", 0, 1, std::int64_t{1} << 32)
                  : o.req("m").as_int(1, std::int64_t{1} << 32);
    g.n = o.req("n").as_int(1, std::int64_t{1} << 32);
    g.k = o.req("k").as_int(1, std::int64_t{1} << 32);
    g.tflops = o.req("tflops").as_number(1e-6, 1e6);
    g.time_us = o.number_or("time_us", 0, 0, kBig);
  });
  return g;
}

template <class F>
void each(Object& o, std::string_view key, F&& f) {
  if (auto a = o.get(key)) a->for_each_element(f);
}

calibration::Measurement read_measurement(const Json& j, const std::string& file) {
  const Node root(j, "", std::make_shared<const std::string>(file));
  calibration::Measurement m;
  m.file = file;
  read_object(root, [&](Object& o) {
    m.description = o.string_or("description", "");
    m.device = o.req("device").as_string();
    m.system = o.string_or("system", "");
    m.date = o.req("date").as_string();
    m.tool = o.req("tool").as_string();
    m.source = o.req("source").as_string();
    if (auto d = o.get("device_details")) {
      if (!d->json().is_object()) d->fail("expected an object");
      m.device_details = nlohmann::ordered_json(d->json());
    }
    m.calls_timed_alone = o.bool_or("calls_timed_alone", false);
    each(o, "gemm", [&](const Node& n) { m.gemm.push_back(gemm_point(n, false)); });
    each(o, "grouped_gemm", [&](const Node& n) { m.grouped_gemm.push_back(gemm_point(n, true)); });
    each(o, "attention", [&](const Node& n) {
      calibration::AttentionPoint a;
      read_object(n, [&](Object& p) {
        a.pass = p.req("pass").as_string();
        if (a.pass != "fwd" && a.pass != "bwd") p.req("pass").fail("expected fwd or bwd");
        a.tflops = p.req("tflops").as_number(1e-6, 1e6);
        a.what = p.string_or("what", "");
      });
      m.attention.push_back(a);
    });
    each(o, "memory", [&](const Node& n) {
      calibration::MemoryPoint mp;
      read_object(n, [&](Object& p) {
        mp.kernel = p.req("kernel").as_string();
        if (mp.kernel != "copy" && mp.kernel != "elementwise" && mp.kernel != "quantize" &&
            mp.kernel != "norm")
          p.req("kernel").fail("unknown memory kernel '" + mp.kernel +
                               "'; known: copy, elementwise, quantize, norm");
        mp.implementation = p.string_or("implementation", "");
        mp.what = p.string_or("what", "");
        mp.bytes = p.req("bytes").as_number(1, kBig);
        mp.GBps = p.req("GBps").as_number(1e-6, 1e6);
        mp.time_us = p.number_or("time_us", 0, 0, kBig);
        if (mp.kernel == "norm" && !(mp.time_us > 0))
          p.req("kernel").fail(
              "a norm point needs its kernel time (time_us): it is fitted for "
              "the fixed part of a memory-bound kernel's duration");
      });
      m.memory.push_back(mp);
    });
    if (auto l = o.get("launch")) {
      calibration::LaunchPoint lp;
      read_object(*l, [&](Object& p) {
        lp.host_launch_us = p.req("host_launch_us").as_number(0, kBig);
        lp.device_kernel_us = p.req("device_kernel_us").as_number(0, kBig);
        lp.launch_to_complete_us = p.req("launch_to_complete_us").as_number(0, kBig);
        lp.sync_round_trip_us = p.req("sync_round_trip_us").as_number(0, kBig);
      });
      m.launch = lp;
    }
    each(o, "graph", [&](const Node& n) {
      calibration::GraphPoint g;
      read_object(n, [&](Object& p) {
        g.nodes = static_cast<int>(p.req("nodes").as_int(1, 1 << 24));
        g.capture_us = p.number_or("capture_us", 0, 0, kBig);
        g.instantiate_us = p.number_or("instantiate_us", 0, 0, kBig);
        g.host_launch_us = p.number_or("host_launch_us", 0, 0, kBig);
        g.replay_us = p.req("replay_us").as_number(0, kBig);
      });
      m.graph.push_back(g);
    });
    each(o, "p2p", [&](const Node& n) {
      calibration::P2pPoint pp;
      read_object(n, [&](Object& p) {
        pp.src = static_cast<int>(p.req("src").as_int(0, 1 << 16));
        pp.dst = static_cast<int>(p.req("dst").as_int(0, 1 << 16));
        pp.bytes = p.req("bytes").as_number(1, kBig);
        pp.GBps = p.req("GBps").as_number(1e-6, 1e6);
      });
      m.p2p.push_back(pp);
    });
    each(o, "ssd_scan", [&](const Node& n) {
      calibration::SsdPoint sp;
      read_object(n, [&](Object& p) {
        sp.pass = p.req("pass").as_string();
        if (sp.pass != "fwd") p.req("pass").fail("expected fwd (forward timings only are fitted)");
        for (auto [key, to] : {std::pair{"batch", &sp.batch},
                               {"seqlen", &sp.seqlen},
                               {"heads", &sp.heads},
                               {"head_dim", &sp.head_dim},
                               {"groups", &sp.groups},
                               {"state", &sp.state},
                               {"chunk", &sp.chunk}})
          *to = p.req(key).as_int(1, std::int64_t{1} << 32);
        if (sp.heads % sp.groups != 0) p.req("groups").fail("groups must divide heads");
        sp.time_us = p.req("time_us").as_number(1e-3, kBig);
      });
      m.ssd_scan.push_back(sp);
    });
    each(o, "gdn_chunk", [&](const Node& n) {
      calibration::GdnPoint gp;
      read_object(n, [&](Object& p) {
        gp.pass = p.req("pass").as_string();
        if (gp.pass != "fwd" && gp.pass != "bwd") p.req("pass").fail("expected fwd or bwd");
        for (auto [key, to] : {std::pair{"seqs", &gp.seqs},
                               {"seqlen", &gp.seqlen},
                               {"heads", &gp.heads},
                               {"key_dim", &gp.key_dim},
                               {"value_dim", &gp.value_dim}})
          *to = p.req(key).as_int(1, std::int64_t{1} << 32);
        gp.time_us = p.req("time_us").as_number(1e-3, kBig);
      });
      m.gdn_chunk.push_back(gp);
    });
    each(o, "sustained_gemm", [&](const Node& n) {
      calibration::SustainedPoint sp;
      read_object(n, [&](Object& p) {
        sp.dtype = gemm_dtype(p);
        for (auto [key, to] : {std::pair{"m", &sp.m}, {"n", &sp.n}, {"k", &sp.k}})
          *to = p.req(key).as_int(1, std::int64_t{1} << 32);
        sp.t_s = p.req("t_s").as_number(1e-6, 1e6);
        sp.tflops = p.req("tflops").as_number(1e-6, 1e6);
        sp.sm_clock_mhz = p.number_or("sm_clock_mhz", 0, 0, 1e5);
      });
      m.sustained_gemm.push_back(sp);
    });
    if (auto l = o.get("moe_layer")) {
      calibration::MoeLayerSet set;
      read_object(*l, [&](Object& p) {
        set.gpus = static_cast<int>(p.req("gpus").as_int(1, 1 << 20));
        set.ep = static_cast<int>(p.req("ep").as_int(1, 1 << 20));
        set.seq_length = p.req("seq_length").as_int(1, std::int64_t{1} << 32);
        set.micro_batch_size = p.req("micro_batch_size").as_int(1, 1 << 20);
        const auto models = p.req("models");
        if (!models.json().is_object() || models.json().empty())
          models.fail("expected an object of model configs by name");
        for (const auto& [name, cfg] : models.json().items())
          if (!cfg.is_object()) models.child_at(cfg, name).fail("expected a model config object");
        set.models = nlohmann::ordered_json(models.json());
        p.req("cases").for_each_element([&](const Node& n) {
          calibration::MoeLayerPoint c;
          read_object(n, [&](Object& q) {
            c.name = q.req("case").as_string();
            c.model = q.req("model").as_string();
            if (!set.models.contains(c.model))
              q.req("model").fail("no model '" + c.model + "' in moe_layer.models");
            c.dispatcher = q.req("dispatcher").as_string();
            c.precision = q.req("precision").as_string();
            c.forward_ms = q.req("forward_ms").as_number(1e-6, kBig);
            c.backward_ms = q.req("backward_ms").as_number(1e-6, kBig);
          });
          set.cases.push_back(c);
        });
      });
      m.moe_layer = set;
    }
    // Communication tables (NCCL, EP libraries) and their own settings, per-step statistics
    // and weak-scaling pairs: read by their fitters (calibration/link_fit.hpp,
    // calibration/ep_fit.hpp, calibration/jitter_fit.hpp), not here.
    o.ignore({"points", "pairs", "dispatcher", "gpus_per_domain", "experts", "experts_per_rank",
              "topk", "groups", "router_groups", "router_topk_groups", "tokens", "hidden", "sm_fit",
              "sm_by_ranks"});
  });
  return m;
}

}  // namespace

calibration::Measurement load_measurement_text(const std::string& text, const std::string& file) {
  return read_measurement(parse_json(text, file), file);
}

calibration::Measurement load_measurement_file(const std::string& path) {
  return read_measurement(read_json_file(path), path);
}

}  // namespace moesim::config
