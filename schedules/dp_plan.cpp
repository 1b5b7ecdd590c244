#include "schedules/dp_plan.hpp"

#include <algorithm>
#include <limits>

namespace moesim::schedules {

double default_bucket_params(std::int64_t dp) {
  return std::max(40e6, 1e6 * static_cast<double>(dp));
}

DpPlan dp_plan(const workload::ModelConfig& m, const workload::Parallelism& p,
               const workload::Framework& fw, const VirtualStage& stage, std::int64_t padded_vocab,
               ScheduleKind schedule, const workload::Lora* trained) {
  DpPlan plan;
  const std::size_t n = stage.items.size();
  plan.item = stage_item_parameters(m, p, stage, padded_vocab, schedule, trained);
  plan.bucket.assign(n, StageParams{});
  // Bucketing off (see the header): one bucket, closing at the stage's first item.
  const bool bucketed = stage.pp_rank == 0 && stage.vp == 0 && fw.overlap_grad_reduce &&
                        !fw.overlap_param_gather_with_optimizer_step;
  constexpr double kWhole = std::numeric_limits<double>::infinity();
  const double dense_size =
      bucketed ? fw.ddp_bucket_size.value_or(default_bucket_params(p.dp * p.cp)) : kWhole;
  const double expert_size =
      bucketed ? fw.ddp_bucket_size.value_or(default_bucket_params(p.expert_dp)) : kWhole;
  StageParams open;
  for (std::size_t k = n; k-- > 0;) {  // backward order
    open += plan.item[k];
    if (open.dense > 0 && (open.dense >= dense_size || k == 0)) {
      plan.bucket[k].dense = open.dense;
      open.dense = 0;
    }
    if (open.expert > 0 && (open.expert >= expert_size || k == 0)) {
      plan.bucket[k].expert = open.expert;
      open.expert = 0;
    }
  }
  return plan;
}

}  // namespace moesim::schedules
