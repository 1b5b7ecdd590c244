#include "sim_core/maxmin.hpp"

#include <algorithm>
#include <stdexcept>

namespace moesim::sim_core {

std::size_t MaxMinSolver::add_variable(double weight, double bound) {
  if (!(weight > 0) || !(bound > 0))
    throw std::invalid_argument("MaxMinSolver: weight and bound must be > 0");
  vars_.push_back({weight, bound});
  return vars_.size() - 1;
}

std::size_t MaxMinSolver::add_constraint(double capacity) {
  if (!(capacity >= 0)) throw std::invalid_argument("MaxMinSolver: capacity must be >= 0");
  capacity_.push_back(capacity);
  if (uses_.size() < capacity_.size()) uses_.emplace_back();
  uses_[capacity_.size() - 1].clear();
  return capacity_.size() - 1;
}

void MaxMinSolver::use(std::size_t constraint, std::size_t variable, double coefficient) {
  if (!(coefficient > 0)) throw std::invalid_argument("MaxMinSolver: coefficient must be > 0");
  if (constraint >= capacity_.size()) throw std::out_of_range("MaxMinSolver: no such constraint");
  uses_[constraint].push_back({variable, coefficient});
  (void)vars_.at(variable);
}

void MaxMinSolver::clear() {
  vars_.clear();
  capacity_.clear();
}

std::vector<double> MaxMinSolver::solve() const {
  std::vector<double> x;
  solve(x);
  return x;
}

void MaxMinSolver::solve(std::vector<double>& x) const {
  const std::size_t n = vars_.size();
  const std::size_t constraints = capacity_.size();
  x.assign(n, 0.0);
  std::vector<char>& fixed = fixed_;
  std::vector<char>& constrained = constrained_;
  std::vector<char>& fix_now = fix_now_;
  fixed.assign(n, 0);
  constrained.assign(n, 0);
  for (std::size_t c = 0; c < constraints; ++c)
    for (const auto& u : uses_[c]) constrained[u.var] = 1;
  for (std::size_t i = 0; i < n; ++i)
    if (!constrained[i] && vars_[i].bound == kUnbounded)
      throw std::logic_error("MaxMinSolver: a variable has neither a constraint nor a bound");

  std::vector<double>& remaining = remaining_;
  remaining = capacity_;
  std::size_t left = n;
  while (left > 0) {
    // The lowest level at which a constraint saturates or a bound binds.
    double level = kUnbounded;
    for (std::size_t c = 0; c < constraints; ++c) {
      double demand = 0;
      for (const auto& u : uses_[c])
        if (!fixed[u.var]) demand += u.coef * vars_[u.var].weight;
      if (demand > 0) level = std::min(level, std::max(0.0, remaining[c]) / demand);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!fixed[i]) level = std::min(level, vars_[i].bound / vars_[i].weight);

    // Fix every variable that is bounded at this level or sits on a saturated constraint.
    constexpr double kRel = 1e-12;
    fix_now.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      if (!fixed[i] && vars_[i].bound / vars_[i].weight <= level * (1 + kRel)) fix_now[i] = 1;
    for (std::size_t c = 0; c < constraints; ++c) {
      double demand = 0;
      for (const auto& u : uses_[c])
        if (!fixed[u.var]) demand += u.coef * vars_[u.var].weight;
      if (demand > 0 && std::max(0.0, remaining[c]) / demand <= level * (1 + kRel))
        for (const auto& u : uses_[c])
          if (!fixed[u.var]) fix_now[u.var] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!fix_now[i]) continue;
      x[i] = std::min(vars_[i].weight * level, vars_[i].bound);
      fixed[i] = 1;
      --left;
    }
    for (std::size_t c = 0; c < constraints; ++c)
      for (const auto& u : uses_[c])
        if (fix_now[u.var]) remaining[c] -= u.coef * x[u.var];
  }
}

}  // namespace moesim::sim_core
