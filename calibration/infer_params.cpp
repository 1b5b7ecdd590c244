#include "calibration/infer_params.hpp"

#include <array>

namespace moesim::calibration {
namespace {

hw_models::Param inferred(double x) {
  return {x, "inferred by moesim infer"};
}

constexpr std::array<InferableParam, 3> kParams{{
    {"numa_unbound_factor", "host costs x this without NUMA binding (journey step 8)", 1.0, 4.0,
     "cpu_numa_binding",
     [](hw_models::SystemSpec& s, double x) { s.host.numa_unbound_factor = inferred(x); }},
    {"te_slim_factor",
     "Transformer Engine module host time x this with the slim host code (step 12)", 0.05, 1.0,
     "te_host_slim",
     [](hw_models::SystemSpec& s, double x) { s.host.te_slim_factor = inferred(x); }},
    {"deepep_tuned_factor", "DeepEP kernels' bandwidth x this once NVIDIA tuned them (step 7)", 1.0,
     5.0, "deepep_tuned",
     [](hw_models::SystemSpec& s, double x) { s.ep_dispatch.deepep_tuned_factor = inferred(x); }},
}};

}  // namespace

std::span<const InferableParam> inferable_params() {
  return kParams;
}

const InferableParam* find_inferable(std::string_view name) {
  for (const auto& p : kParams)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace moesim::calibration
