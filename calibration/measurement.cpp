#include "calibration/measurement.hpp"

#include <filesystem>

namespace moesim::calibration {

using Json = nlohmann::ordered_json;

Json measurement_json(const Measurement& m) {
  Json j;
  if (!m.description.empty()) j["description"] = m.description;
  j["device"] = m.device;
  if (!m.system.empty()) j["system"] = m.system;
  j["date"] = m.date;
  j["tool"] = m.tool;
  j["source"] = m.source;
  if (!m.device_details.empty()) j["device_details"] = m.device_details;
  const auto gemms = [](const std::vector<GemmPoint>& v, bool grouped) {
    Json a = Json::array();
    for (const auto& g : v) {
      Json p{{"dtype", g.dtype}};
      if (grouped && g.groups > 0) p["groups"] = g.groups;
      if (!grouped && g.groups > 1) p["batch"] = g.groups;
      if (g.m > 0) p["m"] = g.m;
      p["n"] = g.n;
      p["k"] = g.k;
      p["tflops"] = g.tflops;
      if (g.time_us > 0) p["time_us"] = g.time_us;
      a.push_back(p);
    }
    return a;
  };
  if (m.calls_timed_alone) j["calls_timed_alone"] = true;
  if (!m.gemm.empty()) j["gemm"] = gemms(m.gemm, false);
  if (!m.grouped_gemm.empty()) j["grouped_gemm"] = gemms(m.grouped_gemm, true);
  if (!m.attention.empty()) {
    Json a = Json::array();
    for (const auto& p : m.attention) {
      Json e{{"pass", p.pass}, {"tflops", p.tflops}};
      if (!p.what.empty()) e["what"] = p.what;
      a.push_back(e);
    }
    j["attention"] = a;
  }
  if (!m.memory.empty()) {
    Json a = Json::array();
    for (const auto& p : m.memory) {
      Json e{{"kernel", p.kernel}, {"bytes", p.bytes}, {"GBps", p.GBps}};
      if (p.time_us > 0) e["time_us"] = p.time_us;
      if (!p.implementation.empty()) e["implementation"] = p.implementation;
      if (!p.what.empty()) e["what"] = p.what;
      a.push_back(e);
    }
    j["memory"] = a;
  }
  if (m.launch)
    j["launch"] = {{"host_launch_us", m.launch->host_launch_us},
                   {"device_kernel_us", m.launch->device_kernel_us},
                   {"launch_to_complete_us", m.launch->launch_to_complete_us},
                   {"sync_round_trip_us", m.launch->sync_round_trip_us}};
  if (!m.graph.empty()) {
    Json a = Json::array();
    for (const auto& g : m.graph)
      a.push_back({{"nodes", g.nodes},
                   {"capture_us", g.capture_us},
                   {"instantiate_us", g.instantiate_us},
                   {"host_launch_us", g.host_launch_us},
                   {"replay_us", g.replay_us}});
    j["graph"] = a;
  }
  if (!m.p2p.empty()) {
    Json a = Json::array();
    for (const auto& p : m.p2p)
      a.push_back({{"src", p.src}, {"dst", p.dst}, {"bytes", p.bytes}, {"GBps", p.GBps}});
    j["p2p"] = a;
  }
  if (!m.ssd_scan.empty()) {
    Json a = Json::array();
    for (const auto& p : m.ssd_scan)
      a.push_back({{"pass", p.pass},
                   {"batch", p.batch},
                   {"seqlen", p.seqlen},
                   {"heads", p.heads},
                   {"head_dim", p.head_dim},
                   {"groups", p.groups},
                   {"state", p.state},
                   {"chunk", p.chunk},
                   {"time_us", p.time_us}});
    j["ssd_scan"] = a;
  }
  if (!m.gdn_chunk.empty()) {
    Json a = Json::array();
    for (const auto& p : m.gdn_chunk)
      a.push_back({{"pass", p.pass},
                   {"seqs", p.seqs},
                   {"seqlen", p.seqlen},
                   {"heads", p.heads},
                   {"key_dim", p.key_dim},
                   {"value_dim", p.value_dim},
                   {"time_us", p.time_us}});
    j["gdn_chunk"] = a;
  }
  if (!m.sustained_gemm.empty()) {
    Json a = Json::array();
    for (const auto& p : m.sustained_gemm) {
      Json e{{"dtype", p.dtype}, {"m", p.m},     {"n", p.n},
             {"k", p.k},         {"t_s", p.t_s}, {"tflops", p.tflops}};
      if (p.sm_clock_mhz > 0) e["sm_clock_mhz"] = p.sm_clock_mhz;
      a.push_back(e);
    }
    j["sustained_gemm"] = a;
  }
  if (m.moe_layer) {
    const auto& l = *m.moe_layer;
    Json cases = Json::array();
    for (const auto& c : l.cases)
      cases.push_back({{"case", c.name},
                       {"model", c.model},
                       {"dispatcher", c.dispatcher},
                       {"precision", c.precision},
                       {"forward_ms", c.forward_ms},
                       {"backward_ms", c.backward_ms}});
    j["moe_layer"] = {{"gpus", l.gpus},
                      {"ep", l.ep},
                      {"seq_length", l.seq_length},
                      {"micro_batch_size", l.micro_batch_size},
                      {"models", l.models},
                      {"cases", cases}};
  }
  return j;
}

std::string measurement_name(const Measurement& m) {
  return m.file.empty() ? std::string("(in memory)")
                        : std::filesystem::path(m.file).filename().string();
}

Plan default_plan(bool quick) {
  Plan p;
  // The DeepGEMM table's DeepSeek-V3 (N, K) pairs plus squares; M from a short
  // microbatch to a long one.
  const std::vector<std::pair<std::int64_t, std::int64_t>> nk =
      quick ? std::vector<std::pair<std::int64_t, std::int64_t>>{{7168, 2048},
                                                                 {4096, 7168},
                                                                 {8192, 8192}}
            : std::vector<std::pair<std::int64_t, std::int64_t>>{
                  {2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                  {4096, 7168}, {7168, 2048},  {2048, 2048}, {8192, 8192}};
  const std::vector<std::int64_t> ms =
      quick ? std::vector<std::int64_t>{1024, 4096}
            : std::vector<std::int64_t>{256, 1024, 4096, 8192, 16384};
  for (const char* d : {"bf16", "fp8"})
    for (auto m : ms)
      for (auto [n, k] : nk) p.gemm.push_back({d, 1, m, n, k});
  // Routed experts: DeepSeek-V3's fc1 (N 4096 = 2 x 2048, K 7168) and fc2 (N 7168, K 2048)
  // with 4 to 32 local experts and 128 to 2048 tokens each.
  const std::vector<std::int64_t> groups =
      quick ? std::vector<std::int64_t>{8} : std::vector<std::int64_t>{4, 8, 32};
  const std::vector<std::int64_t> per =
      quick ? std::vector<std::int64_t>{512} : std::vector<std::int64_t>{128, 512, 2048};
  for (const char* d : {"bf16", "fp8"})
    for (auto g : groups)
      for (auto m : per)
        for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 7168}, {7168, 2048}})
          p.grouped_gemm.push_back({d, g, m, n, k});
  p.memory_kernels = {"copy", "elementwise", "quantize"};
  for (double mib = 1; mib <= 1024; mib *= quick ? 16 : 4)
    p.memory_bytes.push_back(mib * 1024 * 1024);
  p.graph_nodes = quick ? std::vector<int>{1, 100} : std::vector<int>{1, 10, 100, 1000};
  // Sustained load: a 4096 x 8192 x 8192 GEMM of the grid (in both plans) back to back,
  // long enough for the power cap's and the heat's clock drop to settle; BF16 and, in the
  // full plan, FP8, which loads the Tensor Cores differently.
  for (const char* d :
       quick ? std::vector<const char*>{"bf16"} : std::vector<const char*>{"bf16", "fp8"})
    p.sustained.push_back({d, 4096, 8192, 8192, quick ? 15.0 : 45.0, quick ? 1.0 : 1.5});
  return p;
}

Json plan_json(const Plan& p) {
  Json j;
  const auto shapes = [](const std::vector<GemmShape>& v) {
    Json a = Json::array();
    for (const auto& s : v)
      a.push_back({{"dtype", s.dtype}, {"groups", s.groups}, {"m", s.m}, {"n", s.n}, {"k", s.k}});
    return a;
  };
  j["gemm"] = shapes(p.gemm);
  j["grouped_gemm"] = shapes(p.grouped_gemm);
  Json sus = Json::array();
  for (const auto& s : p.sustained)
    sus.push_back({{"dtype", s.dtype},
                   {"m", s.m},
                   {"n", s.n},
                   {"k", s.k},
                   {"seconds", s.seconds},
                   {"bin_s", s.bin_s}});
  j["sustained"] = sus;
  j["grouped_streams"] = p.grouped_streams;
  j["memory_kernels"] = p.memory_kernels;
  j["memory_bytes"] = p.memory_bytes;
  j["graph_nodes"] = p.graph_nodes;
  j["p2p_bytes"] = p.p2p_bytes;
  return j;
}

}  // namespace moesim::calibration
