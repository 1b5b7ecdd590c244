#include "config/caveats.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/load.hpp"

namespace moesim::config {

std::vector<std::string> corpus_fit_cpus(const std::string& parameter) {
  const Json& profile = preset_parsed(PresetKind::profile, "corpus", "calibration profile");
  if (profile.contains("fits"))
    for (const auto& f : profile["fits"])
      if (f.value("parameter", "") == parameter && f.contains("cpus"))
        return f["cpus"].get<std::vector<std::string>>();
  return {};
}

std::vector<std::string> prediction_caveats(const Scenario& sc) {
  std::vector<std::string> out;
  if (sc.system.status == hw_models::SystemStatus::announced)
    out.push_back(fmt::format(
        "system {} is announced hardware, not measured in public: its peaks are the vendor's "
        "announced figures and its efficiencies, host and communication costs are transferred "
        "from other GPUs (moesim describe lists each figure's source); a projection, with no "
        "measured run to check it",
        sc.system.name));
  const auto& numa = sc.system.host.numa_unbound_factor;
  if (!sc.stack.cpu_numa_binding && numa && numa->value != 1.0) {
    const auto cpus = corpus_fit_cpus("host.numa_unbound_factor");
    if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), sc.system.node.cpu) == cpus.end())
      out.push_back(fmt::format(
          "stack.cpu_numa_binding off: host costs x {:.2f} (host.numa_unbound_factor), fitted on "
          "unbound runs on {} "
          "only; unmeasured on this host ({}): bound, every host cost is that much lower",
          numa->value, fmt::join(cpus, ", "), sc.system.node.cpu));
  }
  if (sc.training.lora)
    out.push_back(
        "training.lora: TFLOPS/GPU and MFU follow Megatron-Bridge's LoRA accounting (the "
        "frozen GEMMs at two thirds, causal core attention whole, the adapters not counted); "
        "Bridge "
        "itself applies it to SQuAD-packed runs only and reports a mock-data LoRA run with the "
        "full-training count, 1.5 x these GEMM FLOPs (training/utils/flop_utils.py)");
  return out;
}

}  // namespace moesim::config
