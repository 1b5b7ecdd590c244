// framework.batch_p2p_sync: Megatron's non-interleaved 1F1B calls torch.cuda.synchronize()
// after each batched pipeline transfer (schedules/rank_program.cpp device_sync), so the host
// cannot launch an item's kernels before the transfer ahead of it has completed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "predict/predict.hpp"
#include "support/helpers.hpp"

using namespace moesim;

namespace {

predict::Prediction run(const std::string& schedule, bool sync) {
  auto j = config::Json::parse(R"({
    "name": "p2p-sync", "system": "h100", "gpus": 16,
    "model": {"base": "llama3-70b", "num_hidden_layers": 4},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8, "precision": "bf16"},
    "parallelism": {"tp": 8, "pp": 2, "sequence_parallel": true}
  })");
  j["parallelism"]["pipeline_schedule"] = schedule;
  if (schedule == "interleaved-1f1b") j["parallelism"]["vpp"] = 2;
  j["framework"]["batch_p2p_sync"] = sync;
  return predict::predict(config::load_scenario_text(j.dump(), "s.json"), {true, false});
}

// On the first stage, each received output gradient against the first compute kernel that
// starts at or after it: the smallest gap.
double min_gap_after_grad(const predict::Prediction& p) {
  std::vector<double> recv, compute;
  for (const auto& s : p.step.trace) {
    if (s.rank != 0 || s.track < 0) continue;  // rank 0's streams, not its host's launches
    if (s.track == 0) compute.push_back(s.start_s);
    if (p.step.labels[s.label] == "pp.recv_grad") recv.push_back(s.end_s);
  }
  std::sort(compute.begin(), compute.end());
  REQUIRE(recv.size() == 8);
  double gap = std::numeric_limits<double>::infinity();
  for (const double r : recv) {
    const auto next = std::lower_bound(compute.begin(), compute.end(), r);
    if (next != compute.end()) gap = std::min(gap, *next - r);
  }
  return gap;
}

}  // namespace

TEST_CASE("1F1B's device sync keeps the host from launching past a pipeline transfer",
          "[schedules]") {
  const auto synced = run("1f1b", true), eager = run("1f1b", false);
  // Without the sync the host has the backward queued behind its gradient, which starts it at
  // once; with it the host launches the backward after the transfer, one launch at least later.
  CHECK(min_gap_after_grad(eager) == Approx(0).margin(1e-9));
  CHECK(min_gap_after_grad(synced) > 1e-6);
  CHECK(synced.step.step_time_s > eager.step.step_time_s);
  // The GPU idles while the host waits on its peer: pipeline bubble, not host-bound idle
  // (the breakdown charges the part before the transfer completed to the transfer).
  const auto& b = synced.step.breakdown;
  CHECK(b.pipeline_bubble >= eager.step.breakdown.pipeline_bubble);
  CHECK(b.host_bound_idle < b.pipeline_bubble);
}

TEST_CASE("The interleaved schedule overlaps its transfers: no device sync", "[schedules]") {
  CHECK(run("interleaved-1f1b", true).step.step_time_s ==
        run("interleaved-1f1b", false).step.step_time_s);
}
