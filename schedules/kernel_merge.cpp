// schedules/kernel_merge.cpp: KernelPricing's merging of captured kernel runs
// (schedules/kernel_pricing.hpp PricedLayer::merged, sim_core/gpu.hpp coalescing).
#include <limits>

#include "schedules/kernel_pricing.hpp"

namespace moesim::schedules::detail {

// A plain compute kernel's module and chunk pass (kWgrad as kBwd unless the schedule splits
// the backward) as one number from 1, else 0 (PricedLayer::merged, sim_core/gpu.hpp).
std::uint16_t KernelPricing::merge_class(const Priced& p) const {
  for (float x : p.ports)
    if (x > 0) return 0;
  // A persistent kernel holds its SMs until it ends (sim_core/gpu.hpp): merged with its
  // neighbours it would hold them for the whole run.
  if (p.category != kCompute || p.reserved || p.holds) return 0;
  std::uint8_t pass = labels_.pass_of(p.label);
  if (pass == kWgrad && !splits_backward(in_.schedule)) pass = kBwd;
  return static_cast<std::uint16_t>(1 + labels_.module_of(p.label) * (kNoPass + 1) + pass);
}

// Runs of captured kernels merged (PricedLayer::merged).
std::vector<Priced> KernelPricing::merge_runs(const std::vector<Priced>& pass) const {
  const auto plain = [&](const Priced& p) {
    return p.merge_class != 0 && captured(p.module) && !p.sync && !p.side && !p.join &&
           p.module != Module::moe_dispatch;
  };
  std::vector<Priced> out;
  for (const Priced& p : pass) {
    if (!out.empty()) {
      Priced& last = out.back();
      if (plain(p) && plain(last) && last.sms == p.sms && last.merge_class == p.merge_class &&
          last.parts < std::numeric_limits<std::uint16_t>::max()) {
        last.seconds += p.seconds;
        ++last.parts;
        continue;
      }
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace moesim::schedules::detail
