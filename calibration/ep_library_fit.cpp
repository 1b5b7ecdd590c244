#include "calibration/ep_library_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "calibration/bisect.hpp"
#include "hw_models/ep_flows.hpp"
#include "hw_models/topology.hpp"

namespace moesim::calibration {
namespace {

using hw_models::EpLink;
using hw_models::EpLinkParams;
using Files = std::vector<std::pair<std::string, nlohmann::json>>;

struct Row {
  std::string file, what, role, link, why;
  std::string system;
  EpPoint p;
  bool low_latency = false;
  double latency_us = 0;
  EpLink kind = EpLink::nvlink;  // the kind whose parameters the row fits
  bool sm_pair = false;          // one of the file's "sm_fit" rows
  bool sm_by_ranks = false;
};

bool is_ll(const nlohmann::json& f) {
  for (const auto& p : f["points"])
    if (p.contains("latency_us")) return true;
  return false;
}

bool belongs(const std::string& library, const nlohmann::json& f) {
  const std::string d = f.value("dispatcher", "");
  if (library == "deepep") return d == "deepep" && !is_ll(f);
  if (library == "deepep-ll") return d == "deepep" && is_ll(f);
  return d == library;
}

hw_models::Dispatcher dispatcher(const std::string& library) {
  return library == "hybridep" ? hw_models::Dispatcher::hybridep : hw_models::Dispatcher::deepep;
}

std::optional<hw_models::EpLibrary>& slot_of(hw_models::SystemSpec& s, const std::string& library) {
  return library == "hybridep"    ? s.ep_dispatch.hybridep
         : library == "deepep-ll" ? s.ep_dispatch.deepep_low_latency
                                  : s.ep_dispatch.deepep;
}

std::string json_name(const std::string& library) {
  return library == "deepep-ll" ? "deepep_low_latency" : library;
}

std::vector<Row> read_rows(const std::string& library, const Files& files,
                           const EpSystemLookup& systems) {
  std::vector<Row> rows;
  for (const auto& [name, f] : files) {
    if (!belongs(library, f)) continue;
    const std::string system = f.at("system").get<std::string>();
    const auto sys = systems(system);
    std::vector<std::string> pair;
    if (f.contains("sm_fit")) {
      for (const auto& w : f["sm_fit"]["dispatch"]) pair.push_back(w.get<std::string>());
      pair.push_back(f["sm_fit"]["combine"].get<std::string>());
    }
    for (const auto& p : f.at("points")) {
      Row r;
      r.file = name;
      r.system = system;
      r.what = p.at("what").get<std::string>();
      r.role = p.at("role").get<std::string>();
      r.link = p.value("link", "");
      r.why = p.value("why", "");
      EpPoint& e = r.p;
      e.bench.ranks = p.at("ranks").get<int>();
      e.bench.tokens = f.at("tokens").get<double>();
      e.bench.hidden = f.at("hidden").get<double>();
      e.bench.topk = f.at("topk").get<int>();
      e.bench.experts = p.contains("experts") ? p["experts"].get<int>()
                        : f.contains("experts_per_rank")
                            ? f["experts_per_rank"].get<int>() * e.bench.ranks
                            : f.at("experts").get<int>();
      e.bench.groups = f.at("groups").get<int>();
      e.bench.combine = p.at("combine").get<bool>();
      e.bench.sms = p.value("sms", 0);
      e.gpus_per_domain =
          f.at("gpus_per_domain") == "ranks" ? e.bench.ranks : f["gpus_per_domain"].get<int>();
      if (p.contains("latency_us")) {
        r.low_latency = true;
        e.bench.low_latency = true;
        e.bench.message_bytes = p.at("message_bytes").get<double>();
        r.latency_us = p["latency_us"].get<double>();
        r.kind = EpLink::rdma;
      } else {
        e.bench.element_bytes = p.at("element_bytes").get<double>();
        e.rdma = p.at("metric") == "rdma";
        e.GBps = p.at("GBps").get<double>();
        const bool network = r.role == "fit" ? r.link == "network" : e.rdma;
        r.kind = network || r.role == "fit-peer"
                     ? EpLink::rdma
                     : hw_models::ep_nvlink_kind(sys, std::min(e.gpus_per_domain, e.bench.ranks));
      }
      r.sm_pair = std::find(pair.begin(), pair.end(), r.what) != pair.end();
      r.sm_by_ranks = f.value("sm_by_ranks", false);
      rows.push_back(r);
    }
  }
  if (rows.empty())
    throw std::invalid_argument(fmt::format("no measurement file of EP library '{}'", library));
  return rows;
}

double model_value(const hw_models::SystemSpec& s, const std::string& library, const Row& r) {
  const hw_models::Topology topo(s, r.p.bench.ranks, r.p.gpus_per_domain);
  const auto t = hw_models::ep_library_time(s, topo, dispatcher(library), r.p.bench);
  if (r.low_latency) return t.time_s * 1e6;
  return r.p.rdma ? t.rdma_GBps : t.nvl_GBps;
}

double measured(const Row& r) {
  return r.low_latency ? r.latency_us : r.p.GBps;
}

hw_models::SystemSpec with(hw_models::SystemSpec s, const std::string& library,
                           const hw_models::EpLibrary& lib) {
  slot_of(s, library) = lib;
  return s;
}

// The row's fractions with the library's current parameters (for the single-row fits).
hw_models::EpFractions fractions(const hw_models::SystemSpec& s, const std::string& library,
                                 const Row& r) {
  return hw_models::ep_library_fractions(
      s, dispatcher(library), r.low_latency, r.p.bench.combine, r.p.bench.ranks,
      std::min(r.p.gpus_per_domain, r.p.bench.ranks), r.p.bench.element_bytes);
}

double round4(double x) {
  if (x == 0) return 0;
  const double m = std::pow(10.0, 3 - std::floor(std::log10(std::abs(x))));
  return std::round(x * m) / m;
}

hw_models::Param param(double v, const std::string& src) {
  return {round4(v), src};
}

hw_models::EpSmRate& rate_at(EpLinkParams& p, int ranks) {
  for (auto& r : p.sm_by_ranks)
    if (r.ranks == ranks) return r;
  hw_models::EpSmRate r;
  r.ranks = ranks;
  p.sm_by_ranks.push_back(r);
  std::sort(p.sm_by_ranks.begin(), p.sm_by_ranks.end(),
            [](const auto& a, const auto& b) { return a.ranks < b.ranks; });
  return rate_at(p, ranks);
}

std::optional<hw_models::Param>& rate_slot(hw_models::EpSmRate& r, const Row& row) {
  return row.p.bench.combine              ? r.combine_GBps
         : row.p.bench.element_bytes >= 2 ? r.bf16_GBps
                                          : r.fp8_GBps;
}

std::string payload(const Row& r) {
  return r.p.bench.combine ? "combine" : r.p.bench.element_bytes >= 2 ? "bf16" : "fp8";
}

std::string kind_name(EpLink k) {
  return std::string(hw_models::ep_link_names().name(k));
}

}  // namespace

std::vector<std::string> ep_library_names() {
  return {"deepep", "deepep-ll", "hybridep"};
}

std::vector<EpRowResult> ep_library_rows(const std::string& library, const Files& files,
                                         const EpSystemLookup& systems,
                                         const hw_models::EpLibrary& params) {
  std::vector<EpRowResult> out;
  for (const auto& r : read_rows(library, files, systems)) {
    const auto s = with(systems(r.system), library, params);
    EpRowResult e;
    e.file = r.file;
    e.what = r.what;
    e.role = r.role;
    e.system = r.system;
    e.link_kind = kind_name(r.kind);
    e.measured = measured(r);
    e.model = model_value(s, library, r);
    e.error_pct = 100 * (e.model - e.measured) / e.measured;
    e.unit = r.low_latency ? "us" : "GB/s";
    out.push_back(e);
  }
  return out;
}

EpLibraryFit fit_ep_library(const std::string& library, const Files& files,
                            const EpSystemLookup& systems) {
  const auto names = ep_library_names();
  if (std::find(names.begin(), names.end(), library) == names.end())
    throw std::invalid_argument(
        fmt::format("unknown EP library '{}' (known: deepep, deepep-ll, hybridep)", library));
  const std::vector<Row> rows = read_rows(library, files, systems);
  EpLibraryFit out;
  out.library = library;
  for (const auto& [name, f] : files)
    if (belongs(library, f)) out.files.push_back(name);
  hw_models::EpLibrary lib;
  const std::string prefix = "ep_libraries." + json_name(library) + ".";
  std::map<std::string, EpParameterFit> fits;
  const auto record = [&](const std::string& path, double v, const std::string& row,
                          const std::string& model) {
    auto& f = fits[path];
    f.parameter = prefix + path;
    f.value = round4(v);
    if (std::find(f.rows.begin(), f.rows.end(), row) == f.rows.end()) f.rows.push_back(row);
    f.model = model;
  };
  const auto src = [&](const std::string& path) {
    return "calibration/profiles/ep-" + library + ".json: " + path;
  };

  if (library == "deepep-ll") {
    // The fixed cost of the low-latency kernels: what the flows (at DeepEP's fitted link
    // fractions) leave of each fit row's latency, averaged.
    double sum = 0;
    int n = 0;
    for (const auto& r : rows) {
      if (r.role != "fit") continue;
      auto s = systems(r.system);
      slot_of(s, library).reset();
      const auto f = fractions(s, library, r);
      sum += fit_ep_fixed_us(s, f, r.p, r.latency_us);
      ++n;
      record("rdma.fixed_us", 0, r.file + ": " + r.what,
             "the low-latency kernels' fixed cost: measured latency - the flows' makespan at "
             "DeepEP's link fractions");
    }
    if (n == 0) throw std::invalid_argument("deepep-ll: no fit row");
    lib.rdma.emplace().fixed_us = param(sum / n, src("rdma.fixed_us"));
    fits["rdma.fixed_us"].value = lib.rdma->fixed_us->value;
  } else {
    // Every kind a row uses exists, with unit fractions until fitted.
    for (const auto& r : rows) lib.at(r.kind).emplace();
    for (const auto& r : rows)
      if (r.p.gpus_per_domain < r.p.bench.ranks)
        lib.at(hw_models::ep_nvlink_kind(systems(r.system), r.p.gpus_per_domain)).emplace();
    std::map<std::string, std::vector<const Row*>> fraction_rows;  // "kind.param" -> rows
    for (const auto& r : rows)
      if (r.role == "fit")
        fraction_rows[kind_name(r.kind) +
                      (r.p.bench.combine ? ".combine_hbm_fraction" : ".link_fraction")]
            .push_back(&r);
    const auto fraction_slot = [&](hw_models::EpLibrary& l,
                                   const std::string& key) -> std::optional<hw_models::Param>& {
      const auto dot = key.find('.');
      auto& k = *l.at(*hw_models::ep_link_names().find(key.substr(0, dot)));
      return key.substr(dot + 1) == "link_fraction" ? k.link_fraction : k.combine_hbm_fraction;
    };
    const auto share_nvlink = [&](hw_models::EpLibrary& l) {
      // A kind without a link-bound row: the library's NVLink fractions.
      if (!l.mnnvl || !l.nvlink) return;
      if (!fraction_rows.count("mnnvl.link_fraction") && l.nvlink->link_fraction)
        l.mnnvl->link_fraction = param(l.nvlink->link_fraction->value, src("mnnvl.link_fraction"));
      if (!fraction_rows.count("mnnvl.combine_hbm_fraction") && l.nvlink->combine_hbm_fraction)
        l.mnnvl->combine_hbm_fraction =
            param(l.nvlink->combine_hbm_fraction->value, src("mnnvl.combine_hbm_fraction"));
    };
    for (int round = 0; round < 8; ++round) {
      // 1. Link fractions, jointly over their rows.
      for (const auto& [key, rs] : fraction_rows) {
        const auto cost = [&](double x) {
          auto trial = lib;
          fraction_slot(trial, key) = hw_models::Param{x, ""};
          share_nvlink(trial);
          double c = 0;
          for (const Row* r : rs) {
            const double m = model_value(with(systems(r->system), library, trial), library, *r);
            c += std::pow(std::log(m / r->p.GBps), 2);
          }
          return c;
        };
        const bool hbm = key.find("hbm") != std::string::npos;
        // Golden section in ln x: the fractions span [0.05, 1], combine's HBM share [0.005, 0.5].
        const double lx = golden_min([&](double l) { return cost(std::exp(l)); },
                                     std::log(hbm ? 0.005 : 0.05), std::log(hbm ? 0.5 : 1.0));
        const double x = std::exp(lx);
        fraction_slot(lib, key) = param(x, src(key));
        for (const Row* r : rs)
          record(key, x, r->file + ": " + r->what,
                 hbm ? "combine's reduction throughput per GPU as a fraction of the GPU's HBM "
                       "bandwidth, jointly "
                       "over its rows: argmin sum ln^2(model / measured)"
                     : "fraction of the link kind's capacity (the system's own NVLink port or NIC) "
                       "the kernels "
                       "reach, jointly over its rows: argmin sum ln^2(model / measured)");
      }
      share_nvlink(lib);
      // 2. SM throughput.
      std::map<std::string, std::vector<const Row*>> pairs;  // file -> its sm_fit rows
      for (const auto& r : rows) {
        if (r.role != "fit-sm") continue;
        if (r.sm_pair) {
          pairs[r.file].push_back(&r);
          continue;
        }
        if (!r.sm_by_ranks) continue;
        const auto s = with(systems(r.system), library, lib);
        auto f = fractions(s, library, r);
        const auto rate = fit_ep_sm_rate(s, f, r.p);
        const std::string key = fmt::format("{}.sm_by_ranks.{}.{}_GBps", kind_name(r.kind),
                                            r.p.bench.ranks, payload(r));
        auto& slot = rate_slot(rate_at(*lib.at(r.kind), r.p.bench.ranks), r);
        if (rate) {
          slot = param(*rate, src(key));
          record(key, *rate, r.file + ": " + r.what,
                 "per-SM throughput at this EP size and payload (GB/s of what a rank receives per "
                 "SM), where the "
                 "row is SM-bound; interpolated in SM seconds per byte between sizes");
        }
      }
      for (const auto& [file, rs] : pairs) {
        const Row *bf16 = nullptr, *fp8 = nullptr, *comb = nullptr;
        for (const Row* r : rs)
          (r->p.bench.combine ? comb : r->p.bench.element_bytes >= 2 ? bf16 : fp8) = r;
        if (!bf16 || !fp8 || !comb)
          throw std::invalid_argument(file + ": sm_fit needs BF16, FP8 dispatch and combine");
        const auto d = fit_ep_sm(bf16->p, fp8->p);
        const auto c = fit_ep_sm(comb->p);
        auto& k = *lib.at(bf16->kind);
        k.sm_copy_us = param(d.copy_us, src(kind_name(bf16->kind) + ".sm_copy_us"));
        k.sm_GBps = param(d.sm_GBps, src(kind_name(bf16->kind) + ".sm_GBps"));
        k.sm_combine_GBps = param(c.sm_GBps, src(kind_name(comb->kind) + ".sm_combine_GBps"));
        const std::string m =
            "dispatch: per token copy and SM, copy_us + bytes / sm_GBps, from BF16 and FP8 at one "
            "SM count (two equations); combine: bytes / sm_combine_GBps";
        for (const Row* r : {bf16, fp8}) {
          record(kind_name(r->kind) + ".sm_copy_us", d.copy_us, r->file + ": " + r->what, m);
          record(kind_name(r->kind) + ".sm_GBps", d.sm_GBps, r->file + ": " + r->what, m);
        }
        record(kind_name(comb->kind) + ".sm_combine_GBps", c.sm_GBps,
               comb->file + ": " + comb->what, m);
      }
      // 3. One peer connection's share of the NIC.
      for (const auto& r : rows) {
        if (r.role != "fit-peer") continue;
        const auto s = with(systems(r.system), library, lib);
        auto f = fractions(s, library, r);
        const auto rate = fit_ep_peer_rate(s, f, r.p);
        if (!rate)
          throw std::invalid_argument(r.file + ": " + r.what +
                                      " is not bound by one peer connection");
        const double nic_GBps = s.network.nic_Gbps.value * s.network.nics_per_gpu.value / 8;
        lib.rdma->peer_fraction = param(*rate / nic_GBps, src("rdma.peer_fraction"));
        record("rdma.peer_fraction", *rate / nic_GBps, r.file + ": " + r.what,
               "what one RDMA peer connection carries, over the NIC's line rate (binds where a GPU "
               "has few peers)");
      }
    }
    // The records hold the last round's values.
    for (auto& [path, f] : fits) {
      (void)path;
      f.value = round4(f.value);
    }
  }
  out.params = lib;
  for (auto& [path, f] : fits) out.fits.push_back(f);
  out.rows = ep_library_rows(library, files, systems, lib);
  return out;
}

namespace {
void put(nlohmann::ordered_json& at, const std::string& key,
         const std::optional<hw_models::Param>& p, const std::string& why) {
  if (p) at[key] = {{"value", p->value}, {"source", why}};
}

std::string rows_text(const EpLibraryFit& f, const std::string& path) {
  for (const auto& fit : f.fits)
    if (fit.parameter == path) {
      std::string s;
      for (const auto& r : fit.rows) s += (s.empty() ? "" : "; ") + r;
      return fmt::format("{}; fitted by moesim calibrate ep from {}", fit.model, s);
    }
  return "the library's NVLink fraction (no link-bound row of this kind: the same kernels on the "
         "same NVLink ports)";
}
}  // namespace

nlohmann::ordered_json ep_profile_json(const EpLibraryFit& f) {
  nlohmann::ordered_json j;
  j["name"] = "ep-" + f.library;
  j["system"] = "all";
  j["device"] =
      "every system preset (the parameters are fractions of its own links and per-SM rates)";
  j["date"] = "2025";
  j["tool"] = "moesim calibrate ep (moesim 0.1.0)";
  std::string files;
  for (const auto& n : f.files) files += (files.empty() ? "" : ", ") + n;
  j["source"] = fmt::format(
      "fitted by `moesim calibrate ep {}` from {} (calibration/measurements/)", f.library, files);
  j["measurements"] = f.files;
  const std::string prefix = "ep_libraries." + json_name(f.library) + ".";
  nlohmann::ordered_json lib = nlohmann::ordered_json::object();
  for (const auto k : {EpLink::nvlink, EpLink::mnnvl, EpLink::rdma}) {
    const auto& p = f.params.at(k);
    if (!p) continue;
    const std::string kn = kind_name(k);
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    const auto at = [&](const std::string& name) {
      return "calibration/profiles/ep-" + f.library +
             ".json: " + rows_text(f, prefix + kn + "." + name);
    };
    put(o, "link_fraction", p->link_fraction, at("link_fraction"));
    put(o, "combine_hbm_fraction", p->combine_hbm_fraction, at("combine_hbm_fraction"));
    put(o, "sm_copy_us", p->sm_copy_us, at("sm_copy_us"));
    put(o, "sm_GBps", p->sm_GBps, at("sm_GBps"));
    put(o, "sm_combine_GBps", p->sm_combine_GBps, at("sm_combine_GBps"));
    put(o, "peer_fraction", p->peer_fraction, at("peer_fraction"));
    put(o, "fixed_us", p->fixed_us, at("fixed_us"));
    if (!p->sm_by_ranks.empty()) {
      nlohmann::ordered_json t = nlohmann::ordered_json::object();
      for (const auto& r : p->sm_by_ranks) {
        nlohmann::ordered_json e = nlohmann::ordered_json::object();
        const std::string base = fmt::format("sm_by_ranks.{}.", r.ranks);
        put(e, "fp8_GBps", r.fp8_GBps, at(base + "fp8_GBps"));
        put(e, "bf16_GBps", r.bf16_GBps, at(base + "bf16_GBps"));
        put(e, "combine_GBps", r.combine_GBps, at(base + "combine_GBps"));
        if (!e.empty()) t[std::to_string(r.ranks)] = e;
      }
      if (!t.empty()) o["sm_by_ranks"] = t;
    }
    lib[kn] = o;
  }
  j["parameters"] = {{"ep_libraries", {{json_name(f.library), lib}}}};
  nlohmann::ordered_json fits = nlohmann::ordered_json::array();
  for (const auto& fit : f.fits)
    fits.push_back({{"parameter", fit.parameter},
                    {"value", fit.value},
                    {"from", fit.rows},
                    {"points", fit.rows.size()},
                    {"model", fit.model}});
  j["fits"] = fits;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : f.rows)
    rows.push_back({{"file", r.file},
                    {"what", r.what},
                    {"role", r.role},
                    {"link", r.link_kind},
                    {"measured", r.measured},
                    {"model", round4(r.model)},
                    {"error_pct", std::round(r.error_pct * 10) / 10},
                    {"unit", r.unit}});
  j["rows"] = rows;
  return j;
}

}  // namespace moesim::calibration
