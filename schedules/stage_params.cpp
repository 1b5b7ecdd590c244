#include "schedules/stage_params.hpp"

#include "workload/flops.hpp"

namespace moesim::schedules {

StageParams stage_parameters(const workload::ModelConfig& m, const workload::Parallelism& p,
                             const PipelineLayout& layout, std::int64_t padded_vocab, int rank, int chunk) {
  const auto lp = workload::layer_parameters(m);
  const double h = static_cast<double>(m.hidden_size);
  const double tp = static_cast<double>(p.tp);
  const double local = m.is_moe() ? static_cast<double>(m.num_experts) / static_cast<double>(p.ep) : 0;
  StageParams s;
  for (const auto& it : layout.stage(rank, chunk).items) {
    bool moe = false;
    switch (it.kind) {
      case LayoutItemKind::embedding:
      case LayoutItemKind::loss: s.dense += static_cast<double>(padded_vocab) * h / tp; continue;
      case LayoutItemKind::mtp:
        moe = m.mtp_is_moe();
        s.dense += 2 * h * h + 3 * h;  // the MTP module's projection and norms
        break;
      case LayoutItemKind::decoder: moe = m.moe_layer[static_cast<std::size_t>(it.index)]; break;
    }
    s.dense += (lp.attention + (moe ? lp.moe_common : lp.dense_mlp)) / tp;
    if (moe) s.expert += local * lp.expert / static_cast<double>(p.etp);
  }
  return s;
}

}  // namespace moesim::schedules
