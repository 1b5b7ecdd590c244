#include "workload/eplb.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moesim::workload {

namespace {

// Rows of float loads, as the library holds them (weight.float()).
using Rows = std::vector<std::vector<float>>;
using Index = std::vector<std::vector<int>>;

// Each row's items into `packs` packs of exactly n/packs items: heaviest first (stable
// descending order), each into the lightest pack with room, the first on ties.
void balanced_packing(const Rows& w, int packs, Index& pack_index, Index& rank_in_pack) {
  pack_index.assign(w.size(), {});
  rank_in_pack.assign(w.size(), {});
  for (std::size_t i = 0; i < w.size(); ++i) {
    const int n = static_cast<int>(w[i].size());
    const int per_pack = n / packs;
    auto& pi = pack_index[i];
    auto& rp = rank_in_pack[i];
    pi.assign(static_cast<std::size_t>(n), -1);
    rp.assign(static_cast<std::size_t>(n), -1);
    if (per_pack == 1) {
      std::iota(pi.begin(), pi.end(), 0);
      std::fill(rp.begin(), rp.end(), 0);
      continue;
    }
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return w[i][static_cast<std::size_t>(a)] > w[i][static_cast<std::size_t>(b)];
    });
    std::vector<float> load(static_cast<std::size_t>(packs), 0.0f);
    std::vector<int> items(static_cast<std::size_t>(packs), 0);
    for (const int item : order) {
      int best = -1;
      for (int p = 0; p < packs; ++p)
        if (items[static_cast<std::size_t>(p)] < per_pack &&
            (best < 0 || load[static_cast<std::size_t>(p)] < load[static_cast<std::size_t>(best)]))
          best = p;
      const auto b = static_cast<std::size_t>(best);
      pi[static_cast<std::size_t>(item)] = best;
      rp[static_cast<std::size_t>(item)] = items[b];
      load[b] += w[i][static_cast<std::size_t>(item)];
      ++items[b];
    }
  }
}

// Each row's logical experts to `physical` copies: the next copy goes to the expert with
// the largest load per copy (the first on ties).
void replicate_experts(const Rows& w, int physical, Index& phy2log, Index& rank, Index& count) {
  phy2log.assign(w.size(), {});
  rank.assign(w.size(), {});
  count.assign(w.size(), {});
  for (std::size_t i = 0; i < w.size(); ++i) {
    const int logical = static_cast<int>(w[i].size());
    auto& p2l = phy2log[i];
    auto& r = rank[i];
    auto& c = count[i];
    p2l.resize(static_cast<std::size_t>(physical));
    std::iota(p2l.begin(), p2l.end(), 0);
    r.assign(static_cast<std::size_t>(physical), 0);
    c.assign(static_cast<std::size_t>(logical), 1);
    for (int slot = logical; slot < physical; ++slot) {
      int best = 0;
      float best_load = w[i][0] / static_cast<float>(c[0]);
      for (int e = 1; e < logical; ++e) {
        const float l =
            w[i][static_cast<std::size_t>(e)] / static_cast<float>(c[static_cast<std::size_t>(e)]);
        if (l > best_load) best = e, best_load = l;
      }
      p2l[static_cast<std::size_t>(slot)] = best;
      r[static_cast<std::size_t>(slot)] = c[static_cast<std::size_t>(best)];
      ++c[static_cast<std::size_t>(best)];
    }
  }
}

std::vector<int> inverse(const std::vector<int>& perm) {
  std::vector<int> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
  return inv;
}

struct Hierarchical {
  Index phy2log, phyrank, logcnt;
};

Hierarchical hierarchical(const Rows& weight, int physical, int groups, int nodes, int gpus) {
  const int layers = static_cast<int>(weight.size());
  const int experts = static_cast<int>(weight[0].size());
  const int group_size = experts / groups;
  const int groups_per_node = groups / nodes;
  const int per_gpu = physical / gpus;
  const int log_per_node = experts / nodes, phy_per_node = physical / nodes;

  // 1. Expert groups onto nodes.
  Rows group_load(static_cast<std::size_t>(layers),
                  std::vector<float>(static_cast<std::size_t>(groups), 0.0f));
  for (int l = 0; l < layers; ++l)
    for (int g = 0; g < groups; ++g)
      for (int j = 0; j < group_size; ++j)
        group_load[static_cast<std::size_t>(l)][static_cast<std::size_t>(g)] +=
            weight[static_cast<std::size_t>(l)][static_cast<std::size_t>(g * group_size + j)];
  Index group_pack, group_rank;
  balanced_packing(group_load, nodes, group_pack, group_rank);
  // log2mlog: a logical expert's position in node-major order ("middle" experts).
  Index log2mlog(static_cast<std::size_t>(layers)), mlog2log(static_cast<std::size_t>(layers));
  for (int l = 0; l < layers; ++l) {
    auto& m = log2mlog[static_cast<std::size_t>(l)];
    m.resize(static_cast<std::size_t>(experts));
    for (int g = 0; g < groups; ++g) {
      const int base =
          (group_pack[static_cast<std::size_t>(l)][static_cast<std::size_t>(g)] * groups_per_node +
           group_rank[static_cast<std::size_t>(l)][static_cast<std::size_t>(g)]) *
          group_size;
      for (int j = 0; j < group_size; ++j)
        m[static_cast<std::size_t>(g * group_size + j)] = base + j;
    }
    mlog2log[static_cast<std::size_t>(l)] = inverse(m);
  }

  // 2. Replicas within each node: rows of (layer, node).
  Rows mlog_load(static_cast<std::size_t>(layers * nodes));
  for (int l = 0; l < layers; ++l)
    for (int n = 0; n < nodes; ++n) {
      auto& row = mlog_load[static_cast<std::size_t>(l * nodes + n)];
      for (int k = 0; k < log_per_node; ++k)
        row.push_back(weight[static_cast<std::size_t>(l)][static_cast<std::size_t>(
            mlog2log[static_cast<std::size_t>(l)]
                    [static_cast<std::size_t>(n * log_per_node + k)])]);
    }
  Index phy2mlog, phyrank, mlogcnt;
  replicate_experts(mlog_load, phy_per_node, phy2mlog, phyrank, mlogcnt);

  // 3. Each node's physical experts onto its GPUs.
  Rows phy_load(mlog_load.size());
  for (std::size_t row = 0; row < mlog_load.size(); ++row)
    for (int p = 0; p < phy_per_node; ++p) {
      const auto m = static_cast<std::size_t>(phy2mlog[row][static_cast<std::size_t>(p)]);
      phy_load[row].push_back(mlog_load[row][m] / static_cast<float>(mlogcnt[row][m]));
    }
  Index pack, rank_in_pack;
  balanced_packing(phy_load, gpus / nodes, pack, rank_in_pack);

  Hierarchical out;
  out.phy2log.assign(static_cast<std::size_t>(layers),
                     std::vector<int>(static_cast<std::size_t>(physical)));
  out.phyrank = out.phy2log;
  out.logcnt.assign(static_cast<std::size_t>(layers),
                    std::vector<int>(static_cast<std::size_t>(experts)));
  for (int l = 0; l < layers; ++l)
    for (int n = 0; n < nodes; ++n) {
      const auto row = static_cast<std::size_t>(l * nodes + n);
      std::vector<int> phy2pphy(static_cast<std::size_t>(phy_per_node));
      for (int p = 0; p < phy_per_node; ++p)
        phy2pphy[static_cast<std::size_t>(p)] = pack[row][static_cast<std::size_t>(p)] * per_gpu +
                                                rank_in_pack[row][static_cast<std::size_t>(p)];
      const std::vector<int> pphy2phy = inverse(phy2pphy);
      for (int q = 0; q < phy_per_node; ++q) {
        const auto p = static_cast<std::size_t>(pphy2phy[static_cast<std::size_t>(q)]);
        const int mlog = phy2mlog[row][p] + n * log_per_node;
        const auto slot = static_cast<std::size_t>(n * phy_per_node + q);
        out.phy2log[static_cast<std::size_t>(l)][slot] =
            mlog2log[static_cast<std::size_t>(l)][static_cast<std::size_t>(mlog)];
        out.phyrank[static_cast<std::size_t>(l)][slot] = phyrank[row][p];
      }
    }
  for (int l = 0; l < layers; ++l)
    for (int e = 0; e < experts; ++e) {
      const int m = log2mlog[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)];
      out.logcnt[static_cast<std::size_t>(l)][static_cast<std::size_t>(e)] =
          mlogcnt[static_cast<std::size_t>(l * nodes + m / log_per_node)]
                 [static_cast<std::size_t>(m % log_per_node)];
    }
  return out;
}

void require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument(why);
}

}  // namespace

EplbPlan rebalance_experts(const std::vector<std::vector<double>>& weight, int replicas, int groups,
                           int nodes, int gpus, std::optional<EplbPolicy> policy) {
  require(!weight.empty() && !weight[0].empty(), "EPLB needs at least one layer of expert loads");
  const int experts = static_cast<int>(weight[0].size());
  Rows w;
  for (const auto& row : weight) {
    require(static_cast<int>(row.size()) == experts,
            "every layer must give a load for each of the same experts");
    std::vector<float> r;
    for (double x : row) {
      require(std::isfinite(x) && x >= 0, "expert loads must be finite and not negative");
      r.push_back(static_cast<float>(x));
    }
    w.push_back(std::move(r));
  }
  require(groups >= 1 && nodes >= 1 && gpus >= 1, "groups, nodes and gpus must be at least 1");
  require(replicas >= experts, "physical experts (" + std::to_string(replicas) +
                                   ") fewer than the " + std::to_string(experts) +
                                   " logical experts");
  require(gpus % nodes == 0,
          std::to_string(gpus) + " GPUs do not split over " + std::to_string(nodes) + " nodes");
  require(replicas % gpus == 0, std::to_string(replicas) + " physical experts do not split over " +
                                    std::to_string(gpus) + " GPUs");
  const bool can_hierarchical = groups % nodes == 0;
  const EplbPolicy chosen =
      policy.value_or(can_hierarchical ? EplbPolicy::hierarchical : EplbPolicy::global);
  if (chosen == EplbPolicy::hierarchical) {
    require(can_hierarchical,
            "the hierarchical policy packs the " + std::to_string(groups) + " expert groups onto " +
                std::to_string(nodes) +
                " nodes and needs groups divisible by nodes; use the global policy");
    require(experts % groups == 0, std::to_string(experts) + " experts do not split into " +
                                       std::to_string(groups) + " groups");
    // Physical experts split over the nodes already: replicas % gpus == 0 and gpus % nodes == 0.
  }
  const Hierarchical h = chosen == EplbPolicy::hierarchical
                             ? hierarchical(w, replicas, groups, nodes, gpus)
                             : hierarchical(w, replicas, 1, 1, gpus);
  EplbPlan plan;
  plan.policy = chosen;
  plan.phy2log = h.phy2log;
  plan.logcnt = h.logcnt;
  for (std::size_t l = 0; l < h.logcnt.size(); ++l) {
    const int most = *std::max_element(h.logcnt[l].begin(), h.logcnt[l].end());
    std::vector<std::vector<int>> l2p(static_cast<std::size_t>(experts),
                                      std::vector<int>(static_cast<std::size_t>(most), -1));
    for (int p = 0; p < replicas; ++p)
      l2p[static_cast<std::size_t>(h.phy2log[l][static_cast<std::size_t>(p)])]
         [static_cast<std::size_t>(h.phyrank[l][static_cast<std::size_t>(p)])] = p;
    plan.log2phy.push_back(std::move(l2p));
  }
  return plan;
}

std::vector<double> gpu_loads(const EplbPlan& plan, std::size_t layer,
                              const std::vector<double>& counts, int gpus) {
  const auto& p2l = plan.phy2log.at(layer);
  const auto& cnt = plan.logcnt.at(layer);
  if (counts.size() != cnt.size())
    throw std::invalid_argument("gpu_loads: one count per logical expert");
  const std::size_t per_gpu = p2l.size() / static_cast<std::size_t>(gpus);
  std::vector<double> load(static_cast<std::size_t>(gpus), 0.0);
  for (std::size_t p = 0; p < p2l.size(); ++p) {
    const auto e = static_cast<std::size_t>(p2l[p]);
    load[p / per_gpu] += counts[e] / cnt[e];
  }
  return load;
}

std::vector<EplbBalance> eplb_balance(const EplbPlan& plan,
                                      const std::vector<std::vector<double>>& counts, int gpus) {
  std::vector<EplbBalance> out;
  for (std::size_t l = 0; l < counts.size(); ++l) {
    const auto& c = counts[l];
    const double mean = std::accumulate(c.begin(), c.end(), 0.0) / gpus;
    EplbBalance b;
    if (c.size() % static_cast<std::size_t>(gpus) == 0) {
      const std::size_t per = c.size() / static_cast<std::size_t>(gpus);
      double hottest = 0;
      for (std::size_t k = 0; k < static_cast<std::size_t>(gpus); ++k)
        hottest = std::max(
            hottest, std::accumulate(c.begin() + static_cast<std::ptrdiff_t>(k * per),
                                     c.begin() + static_cast<std::ptrdiff_t>((k + 1) * per), 0.0));
      b.before = hottest / mean;
    }
    const auto loads = gpu_loads(plan, l, c, gpus);
    b.after = *std::max_element(loads.begin(), loads.end()) / mean;
    out.push_back(b);
  }
  return out;
}

std::int64_t physical_experts(const ModelConfig& m, const Parallelism& p) {
  return m.num_experts + (p.eplb ? p.eplb->redundant_experts : 0);
}

std::optional<EplbSetup> eplb_setup(const ModelConfig& m, const Parallelism& p,
                                    std::int64_t gpus_per_nvlink_domain) {
  if (!p.eplb || !m.is_moe()) return std::nullopt;
  EplbSetup s;
  s.replicas = static_cast<int>(physical_experts(m, p));
  s.groups = m.router_groups > 0 ? static_cast<int>(m.router_groups) : 1;
  const std::int64_t per_domain = std::clamp<std::int64_t>(gpus_per_nvlink_domain / p.etp, 1, p.ep);
  s.nodes = static_cast<int>((p.ep + per_domain - 1) / per_domain);
  s.gpus = static_cast<int>(p.ep);
  s.policy = p.eplb->policy;
  return s;
}

}  // namespace moesim::workload
