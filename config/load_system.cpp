// Reads a system (preset file or inline object). Every number is a Param: either
// {"value": v, "source": "<id in this object's sources map>"} or, in user-written inline
// objects, a bare number, whose source then records where it was written.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/load.hpp"

namespace moesim::config {
namespace {

using hw_models::Param;

// --set's values (apply_system_set): their errors' file, and the source id they carry.
constexpr const char* kSetFile = "<command line>";
constexpr const char* kSetSource = "cli-set";

class ParamReader {
 public:
  explicit ParamReader(std::map<std::string, std::string> sources) : sources_(std::move(sources)) {}

  Param read(const Node& n, double min, double max, bool integral) const {
    Param p;
    if (n.json().is_object()) {
      read_object(n, [&](Object& o) {
        const Node src = o.req("source");
        p.source = source(src);
        try {
          p.value = check(o.req("value"), min, max, integral);
        } catch (const InputError& e) {
          // A value --set put there (apply_system_set) is the command line's error, not the file's.
          if (src.as_string() != kSetSource) throw;
          throw InputError(kSetFile, "--set", fmt::format("{}: {}", e.path(), e.message()));
        }
      });
    } else {
      p.value = check(n, min, max, integral);
      p.source = fmt::format("given inline at {} in {}", n.path(), n.file());
    }
    return p;
  }

  // A source id's text; an id the "sources" do not define is an input error.
  std::string source(const Node& src) const {
    const std::string id = src.as_string();
    auto it = sources_.find(id);
    if (it == sources_.end())
      src.fail(fmt::format("unknown source id '{}'; this object's \"sources\" define: {}", id,
                           known_ids()));
    return it->second;
  }

  Param req(Object& o, std::string_view key, double min, double max, bool integral = false) const {
    return read(o.req(key), min, max, integral);
  }
  // An optional number: absent stays absent.
  std::optional<Param> opt(Object& o, std::string_view key, double min, double max) const {
    if (auto n = o.get(key)) return read(*n, min, max, false);
    return std::nullopt;
  }
  // Two optional numbers that mean something only together: both or neither.
  void opt_pair(Object& o, std::string_view a, std::string_view b, double min_a, double max_a,
                double min_b, double max_b, std::optional<Param>& out_a,
                std::optional<Param>& out_b) const {
    out_a = opt(o, a, min_a, max_a);
    out_b = opt(o, b, min_b, max_b);
    if (out_a.has_value() != out_b.has_value())
      o.node().fail(fmt::format("{} and {} go together", a, b));
  }

 private:
  static double check(const Node& n, double min, double max, bool integral) {
    if (integral)
      return static_cast<double>(
          n.as_int(static_cast<std::int64_t>(min), static_cast<std::int64_t>(max)));
    return n.as_number(min, max);
  }
  std::string known_ids() const {
    std::string out;
    for (const auto& [k, v] : sources_) out += (out.empty() ? "" : ", ") + k;
    return out.empty() ? "(none)" : out;
  }
  std::map<std::string, std::string> sources_;
};

constexpr bool kInt = true;

std::string one_of(const Node& n, std::initializer_list<std::string_view> valid,
                   std::string_view what) {
  std::string v = n.as_string();
  for (auto x : valid)
    if (x == v) return v;
  n.fail(fmt::format("unknown {} '{}'; known: {}", what, v, fmt::join(valid, ", ")));
}

// An object keyed by a count (an EP size, a group of GPUs): the keys as whole numbers in
// [min, max], sorted, each with its JSON key; anything else is refused at the key.
std::vector<std::pair<int, std::string>> count_keys(const Node& t, int min, int max,
                                                    std::string_view what) {
  if (!t.json().is_object()) t.fail(fmt::format("expected an object keyed by {}", what));
  std::vector<std::pair<int, std::string>> keys;
  for (auto it = t.json().begin(); it != t.json().end(); ++it) {
    const auto bad = [&] {
      t.child_at(*it, it.key())
          .fail(fmt::format("expected a {} ({} to {}) as the key", what, min, max));
    };
    int r = 0;
    try {
      r = std::stoi(it.key());
    } catch (const std::exception&) {
      bad();
    }
    if (r < min || r > max || std::to_string(r) != it.key()) bad();
    keys.emplace_back(r, it.key());
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

hw_models::SystemSpec read_system(const Node& node) {
  hw_models::SystemSpec s;
  read_object(node, [&](Object& o) {
    // Consumed by the preset resolution before this reads (config/presets.hpp); named so
    // that the list of valid keys shows it (`base` is a patch's alone).
    o.ignore({"profiles"});
    std::map<std::string, std::string> sources;
    if (auto src = o.get("sources")) {
      read_object(*src, [&](Object& so) {
        for (const auto& [id, text] : src->json().items()) sources[id] = so.req(id).as_string();
      });
    }
    const ParamReader P(std::move(sources));
    s.name = o.req("name").as_string();
    s.description = o.string_or("description", "");
    if (auto st = o.get("status")) {
      read_object(*st, [&](Object& so) {
        s.status = so.req("value").as_enum(hw_models::system_status_names(), "system status");
        s.status_source = P.source(so.req("source"));
      });
    }

    read_object(o.req("gpu"), [&](Object& g) {
      s.gpu.name = g.req("name").as_string();
      s.gpu.arch = g.req("arch").as_enum(hw_models::gpu_arch_names(), "GPU architecture");
      s.gpu.sm_count = P.req(g, "sm_count", 1, 1024, kInt);
      s.gpu.clock_mhz = P.opt(g, "clock_mhz", 100, 10000);
      s.gpu.hbm_GB = P.req(g, "hbm_GB", 1, 100000);
      s.gpu.usable_GiB = P.req(g, "usable_GiB", 1, 100000);
      s.gpu.hbm_TBps = P.req(g, "hbm_TBps", 0.01, 1000);
      s.gpu.l2_MB = P.opt(g, "l2_MB", 0, 100000);
      const Node peaks = g.req("dense_tflops");
      read_object(peaks, [&](Object& po) {
        for (const auto& e : hw_models::dtype_names().entries())
          if (auto n = po.get(e.name)) s.gpu.dense_tflops[e.value] = P.read(*n, 0.001, 1e6, false);
      });
      if (!s.gpu.supports(hw_models::Dtype::bf16))
        peaks.fail("a GPU needs at least a bf16 peak (MFU is reported against it)");
    });
    read_object(o.req("node"), [&](Object& n) {
      s.node.gpus_per_node = P.req(n, "gpus_per_node", 1, 1024, kInt);
      s.node.cpu = n.req("cpu").as_string();
      s.node.cpus_per_node = P.req(n, "cpus_per_node", 1, 64, kInt);
      s.node.cpu_cores = P.req(n, "cpu_cores", 1, 4096, kInt);
      s.node.host_link = one_of(n.req("host_link"), {"pcie5", "nvlink-c2c"}, "host link");
      s.node.host_link_GBps = P.req(n, "host_link_GBps", 0.1, 100000);
      s.node.max_power_kW = P.opt(n, "max_power_kW", 0.01, 100000);
    });
    read_object(o.req("nvlink"), [&](Object& n) {
      s.nvlink.domain_gpus = P.req(n, "domain_gpus", 1, 100000, kInt);
      s.nvlink.bw_GBps = P.req(n, "bw_GBps", 0.1, 100000);
      s.nvlink.usable_GBps = P.opt(n, "usable_GBps", 0.1, 100000);
      s.nvlink.switch_chips = P.req(n, "switch_chips", 0, 1024, kInt);
    });
    read_object(o.req("network"), [&](Object& n) {
      s.network.nic = n.req("nic").as_string();
      // Whole NICs, at least one: the topology gives each its own port and leaf link.
      s.network.nics_per_gpu = P.req(n, "nics_per_gpu", 1, 64, kInt);
      s.network.nic_Gbps = P.req(n, "nic_Gbps", 1, 100000);
      s.network.topology = one_of(n.req("topology"),
                                  {"rail-optimized-fat-tree", "multi-plane-fat-tree"}, "topology");
      s.network.planes = P.req(n, "planes", 1, 64, kInt);
      s.network.latency_same_leaf_us = P.req(n, "latency_same_leaf_us", 0, 1000);
      s.network.latency_cross_leaf_us = P.req(n, "latency_cross_leaf_us", 0, 1000);
      if (auto sh = n.get("sharp")) {
        s.network.sharp = P.read(*sh, 0, 1, kInt);
        if (s.network.sharp->value == 0) s.network.sharp.reset();
      }
    });
    read_object(o.req("efficiency"), [&](Object& e) {
      auto per_dtype = [&](const Node& n, std::map<hw_models::Dtype, Param>& out, double lo = 0.01,
                           double hi = 1) {
        read_object(n, [&](Object& po) {
          for (const auto& d : hw_models::dtype_names().entries())
            if (auto v = po.get(d.name)) out[d.value] = P.read(*v, lo, hi, false);
        });
      };
      per_dtype(e.req("gemm"), s.efficiency.gemm);
      per_dtype(e.req("grouped_gemm"), s.efficiency.grouped_gemm);
      for (const auto& [d, peak] : s.gpu.dense_tflops)
        if (d != hw_models::Dtype::tf32 && !s.efficiency.gemm.count(d))
          e.req("gemm").fail(fmt::format("no GEMM efficiency for {}, which the GPU supports",
                                         hw_models::dtype_names().name(d)));
      s.efficiency.attention_fwd = P.req(e, "attention_fwd", 0.01, 1);
      s.efficiency.attention_bwd = P.req(e, "attention_bwd", 0.01, 1);
      s.efficiency.attention_seq_half_fwd = P.opt(e, "attention_seq_half_fwd", 1, 1e7);
      s.efficiency.attention_seq_half_bwd = P.opt(e, "attention_seq_half_bwd", 1, 1e7);
      P.opt_pair(e, "attention_fp8_fwd", "attention_fp8_bwd", 0.01, 1, 0.01, 1,
                 s.efficiency.attention_fp8_fwd, s.efficiency.attention_fp8_bwd);
      s.efficiency.hbm = P.req(e, "hbm", 0.01, 1);
      s.efficiency.hbm_quantize = P.opt(e, "hbm_quantize", 0.01, 1);
      s.efficiency.hbm_gather = P.opt(e, "hbm_gather", 0.01, 1);
      s.efficiency.ssd_scan_tflops = P.opt(e, "ssd_scan_tflops", 1, 1e7);
      s.efficiency.gdn_chunk_tflops = P.opt(e, "gdn_chunk_tflops", 1, 1e7);
      s.efficiency.sustained_clock_factor = P.opt(e, "sustained_clock_factor", 0.1, 1);
      s.efficiency.kernel_device_us = P.req(e, "kernel_device_us", 0, 1000);
      s.efficiency.memory_kernel_us = P.opt(e, "memory_kernel_us", 0, 1000);
      s.efficiency.gemm_k_overhead = P.opt(e, "gemm_k_overhead", 0, 1e6);
      if (auto v = e.get("gemm_k_overhead_by_dtype")) {
        per_dtype(*v, s.efficiency.gemm_k_overhead_by_dtype, 0, 1e6);
        for (const auto& [d, k0] : s.efficiency.gemm_k_overhead_by_dtype)
          if (!s.gpu.supports(d) || d == hw_models::Dtype::tf32)
            v->fail(fmt::format("a K0 for {}, {}", hw_models::dtype_names().name(d),
                                d == hw_models::Dtype::tf32 ? "in which no GEMM is priced"
                                                            : "which the GPU does not support"));
      }
      s.efficiency.grouped_gemm_k = P.opt(e, "grouped_gemm_k", 1, 1e7);
    });
    read_object(o.req("host"), [&](Object& h) {
      s.host.op_us = P.req(h, "op_us", 0, 1e6);
      s.host.launch_us = P.req(h, "launch_us", 0, 1e6);
      s.host.library_launch_us = P.req(h, "library_launch_us", 0, 1e6);
      s.host.graph_launch_us = P.req(h, "graph_launch_us", 0, 1e6);
      s.host.alloc_us = P.req(h, "alloc_us", 0, 1e6);
      s.host.te_linear_us = P.req(h, "te_linear_us", 0, 1e6);
      s.host.numa_unbound_factor = P.opt(h, "numa_unbound_factor", 1, 100);
      s.host.te_slim_factor = P.opt(h, "te_slim_factor", 0.01, 1);
      s.host.load_factor = P.opt(h, "load_factor", 0.1, 100);
      s.host.rank_contention = P.opt(h, "rank_contention", 0, 10);
      s.host.elementwise_launch_us = P.opt(h, "elementwise_launch_us", 0, 1e6);
      s.host.cpp_launch_us = P.opt(h, "cpp_launch_us", 0, 1e6);
    });
    read_object(o.req("comm"), [&](Object& c) {
      s.comm.base_latency_us = P.req(c, "base_latency_us", 0, 1e6);
      s.comm.nvlink_hop_us = P.req(c, "nvlink_hop_us", 0, 1e6);
      s.comm.network_hop_us = P.req(c, "network_hop_us", 0, 1e6);
      s.comm.nvlink_efficiency = P.opt(c, "nvlink_efficiency", 0.01, 1);
      s.comm.network_efficiency = P.opt(c, "network_efficiency", 0.01, 1);
      s.comm.alltoall_efficiency = P.opt(c, "alltoall_efficiency", 0.01, 1);
      P.opt_pair(c, "nvls_efficiency", "nvls_latency_us", 0.01, 1, 0, 1e6, s.comm.nvls_efficiency,
                 s.comm.nvls_latency_us);
      if (auto t = c.get("ring_group_efficiency"))
        for (const auto& [r, key] : count_keys(*t, 2, 1024, "group size in GPUs"))
          s.comm.ring_group_efficiency[r] =
              P.read(t->child_at(t->json()[key], key), 0.05, 1.5, false);
    });
    if (auto v = o.get("variability"))
      read_object(*v, [&](Object& vo) {
        s.variability.jitter_s = P.opt(vo, "jitter_s", 0, 100);
        s.variability.jitter_fraction = P.opt(vo, "jitter_fraction", 0, 1);
        s.variability.common_s = P.opt(vo, "common_s", 0, 100);
        s.variability.common_fraction = P.opt(vo, "common_fraction", 0, 1);
        s.variability.node_speed_sd = P.opt(vo, "node_speed_sd", 0, 0.5);
      });
    if (auto ep = o.get("ep_dispatch"))
      read_object(*ep, [&](Object& e) {
        s.ep_dispatch.deepep_tuned_factor = P.opt(e, "deepep_tuned_factor", 1, 10);
      });
    if (auto ep = o.get("ep_libraries")) {
      // One library's parameters on one link kind; sm_by_ranks is an object keyed by the
      // EP size (so that a profile's overlay reaches its leaves).
      const auto link = [&](const Node& n) {
        hw_models::EpLinkParams b;
        read_object(n, [&](Object& bo) {
          b.link_fraction = P.opt(bo, "link_fraction", 0.01, 1);
          b.combine_hbm_fraction = P.opt(bo, "combine_hbm_fraction", 0.001, 1);
          b.sm_copy_us = P.opt(bo, "sm_copy_us", 0, 1e3);
          b.sm_GBps = P.opt(bo, "sm_GBps", 0.01, 1e4);
          b.sm_combine_GBps = P.opt(bo, "sm_combine_GBps", 0.01, 1e4);
          b.peer_fraction = P.opt(bo, "peer_fraction", 0.01, 1);
          b.fixed_us = P.opt(bo, "fixed_us", 0, 1e4);
          if (auto t = bo.get("sm_by_ranks")) {
            const auto keys = count_keys(*t, 1, 1 << 20, "EP size in ranks");
            for (const auto& [r, key] : keys) {
              hw_models::EpSmRate rate;
              rate.ranks = r;
              read_object(t->child_at(t->json()[key], key), [&](Object& ro) {
                rate.fp8_GBps = P.opt(ro, "fp8_GBps", 0.01, 1e4);
                rate.bf16_GBps = P.opt(ro, "bf16_GBps", 0.01, 1e4);
                rate.combine_GBps = P.opt(ro, "combine_GBps", 0.01, 1e4);
              });
              b.sm_by_ranks.push_back(rate);
            }
          }
        });
        return b;
      };
      read_object(*ep, [&](Object& e) {
        const std::pair<const char*, std::optional<hw_models::EpLibrary>*> libs[] = {
            {"deepep", &s.ep_dispatch.deepep},
            {"deepep_low_latency", &s.ep_dispatch.deepep_low_latency},
            {"hybridep", &s.ep_dispatch.hybridep}};
        for (const auto& [name, lib] : libs)
          if (auto l = e.get(name))
            read_object(*l, [&](Object& lo) {
              hw_models::EpLibrary out;
              for (const auto k :
                   {hw_models::EpLink::nvlink, hw_models::EpLink::mnnvl, hw_models::EpLink::rdma})
                if (auto v = lo.get(hw_models::ep_link_names().name(k))) out.at(k) = link(*v);
              *lib = out;
            });
      });
    }
  });
  return s;
}

}  // namespace moesim::config

namespace moesim::config {

namespace {
std::string keys_of(const Json& o) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : o.items())
    if (k != "sources" && k != "profiles" && (v.is_object() || v.is_number())) keys.push_back(k);
  return fmt::format("{}", fmt::join(keys, ", "));
}
}  // namespace

SystemSet parse_system_set(const std::string& text) {
  const auto eq = text.find('=');
  const std::string at = "--set " + text;
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(kSetFile, at, "expected PATH=VALUE, e.g. efficiency.sustained_clock_factor=1");
  SystemSet s{text.substr(0, eq), 0};
  // The system's number keys are letters, digits and '_' (only `sources` has others), so a path
  // is those and dots: it goes into a Slurm script's command line (`sweep --slurm-script`) as is.
  if (!std::all_of(s.path.begin(), s.path.end(),
                   [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.'; }))
    throw InputError(kSetFile, at,
                     fmt::format("'{}' is not a path of the system's keys (letters, digits, '_', "
                                 "joined by '.')",
                                 s.path));
  const std::string v = text.substr(eq + 1);
  try {
    std::size_t used = 0;
    s.value = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    throw InputError(kSetFile, at, fmt::format("'{}' is not a number", v));
  }
  if (!std::isfinite(s.value))
    throw InputError(kSetFile, at, fmt::format("'{}' is not a finite number", v));
  return s;
}

LoadOptions load_options(bool uncalibrated, const std::vector<std::string>& set,
                         double headroom_gib) {
  LoadOptions opts{!uncalibrated, headroom_gib};
  for (const auto& t : set) opts.system_set.push_back(parse_system_set(t));
  return opts;
}

std::string to_string(const SystemSet& set) {
  return fmt::format("{}={}", set.path, set.value);
}

std::vector<std::string> system_set_texts(const LoadOptions& opts) {
  std::vector<std::string> out;
  for (const auto& s : opts.system_set) out.push_back(to_string(s));
  return out;
}

std::vector<std::string> apply_system_set(Json& system, const std::vector<SystemSet>& sets) {
  std::vector<std::string> lines;
  const std::string name = system.value("name", std::string("?"));
  for (const auto& s : sets) {
    const std::string at = fmt::format("--set {}", to_string(s));
    Json* cur = &system;
    std::string walked;
    std::size_t from = 0;
    while (true) {
      const auto dot = s.path.find('.', from);
      const std::string key = s.path.substr(from, dot == std::string::npos ? dot : dot - from);
      if (!cur->is_object() || !cur->contains(key) || key == "sources" || key == "profiles")
        throw InputError(
            kSetFile, at,
            fmt::format("system '{}' has no number at {}{}; {} holds: {}", name, walked, key,
                        walked.empty() ? "the system" : walked.substr(0, walked.size() - 1),
                        cur->is_object() ? keys_of(*cur) : "no keys"));
      cur = &(*cur)[key];
      walked += key + ".";
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    // A sourced number ({"value", "source"}) or, in an inline system, a bare one.
    Json* value = cur->is_object() && cur->contains("value") ? &(*cur)["value"] : cur;
    if (!value->is_number())
      throw InputError(kSetFile, at,
                       fmt::format("{} of system '{}' is not a number but holds: {}", s.path, name,
                                   cur->is_object() ? keys_of(*cur) : cur->dump()));
    lines.push_back(fmt::format("{} = {:g} (was {:g})", s.path, s.value, value->get<double>()));
    *cur = Json{{"value", s.value}, {"source", kSetSource}};
  }
  if (!sets.empty())
    system["sources"][kSetSource] =
        "set on the command line (--set): a what-if on the calibrated model";
  return lines;
}

}  // namespace moesim::config
