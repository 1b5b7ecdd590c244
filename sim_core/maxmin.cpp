#include "sim_core/maxmin.hpp"

#include <algorithm>
#include <stdexcept>

namespace moesim::sim_core {

std::size_t MaxMinSolver::add_variable(double weight, double bound) {
  if (!(weight > 0) || !(bound > 0)) throw std::invalid_argument("MaxMinSolver: weight and bound must be > 0");
  vars_.push_back({weight, bound});
  return vars_.size() - 1;
}

std::size_t MaxMinSolver::add_constraint(double capacity) {
  if (!(capacity >= 0)) throw std::invalid_argument("MaxMinSolver: capacity must be >= 0");
  capacity_.push_back(capacity);
  uses_.emplace_back();
  return capacity_.size() - 1;
}

void MaxMinSolver::use(std::size_t constraint, std::size_t variable, double coefficient) {
  if (!(coefficient > 0)) throw std::invalid_argument("MaxMinSolver: coefficient must be > 0");
  uses_.at(constraint).push_back({variable, coefficient});
  (void)vars_.at(variable);
}

std::vector<double> MaxMinSolver::solve() const {
  const std::size_t n = vars_.size();
  std::vector<double> x(n, 0.0);
  std::vector<bool> fixed(n, false);
  std::vector<bool> constrained(n, false);
  for (const auto& us : uses_)
    for (const auto& u : us) constrained[u.var] = true;
  for (std::size_t i = 0; i < n; ++i)
    if (!constrained[i] && vars_[i].bound == kUnbounded)
      throw std::logic_error("MaxMinSolver: a variable has neither a constraint nor a bound");

  std::vector<double> remaining = capacity_;
  std::size_t left = n;
  while (left > 0) {
    // The lowest level at which a constraint saturates or a bound binds.
    double level = kUnbounded;
    for (std::size_t c = 0; c < uses_.size(); ++c) {
      double demand = 0;
      for (const auto& u : uses_[c])
        if (!fixed[u.var]) demand += u.coef * vars_[u.var].weight;
      if (demand > 0) level = std::min(level, std::max(0.0, remaining[c]) / demand);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!fixed[i]) level = std::min(level, vars_[i].bound / vars_[i].weight);

    // Fix every variable that is bounded at this level or sits on a saturated constraint.
    constexpr double kRel = 1e-12;
    std::vector<bool> fix_now(n, false);
    for (std::size_t i = 0; i < n; ++i)
      if (!fixed[i] && vars_[i].bound / vars_[i].weight <= level * (1 + kRel)) fix_now[i] = true;
    for (std::size_t c = 0; c < uses_.size(); ++c) {
      double demand = 0;
      for (const auto& u : uses_[c])
        if (!fixed[u.var]) demand += u.coef * vars_[u.var].weight;
      if (demand > 0 && std::max(0.0, remaining[c]) / demand <= level * (1 + kRel))
        for (const auto& u : uses_[c])
          if (!fixed[u.var]) fix_now[u.var] = true;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!fix_now[i]) continue;
      x[i] = std::min(vars_[i].weight * level, vars_[i].bound);
      fixed[i] = true;
      --left;
    }
    for (std::size_t c = 0; c < uses_.size(); ++c)
      for (const auto& u : uses_[c])
        if (fix_now[u.var]) remaining[c] -= u.coef * x[u.var];
  }
  return x;
}

}  // namespace moesim::sim_core
