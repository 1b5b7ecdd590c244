// sim_core/maxmin.hpp: weighted max-min fair sharing (SimGrid's LMM, simplified).
//
// Variables x_i >= 0 with weights w_i > 0 and optional upper bounds b_i; constraints
// sum_i a_ci x_i <= C_c. The max-min fair allocation is found by progressive filling:
// raise a common level L with x_i = w_i L for all unfixed variables until a constraint
// saturates, (C_c - fixed usage) / sum_unfixed a_ci w_i = L, or a bound binds,
// b_i / w_i = L; fix those variables at that level, remove them, repeat. The result
// maximizes the smallest x_i / w_i, then the next smallest, and so on. A variable that
// appears in no constraint and has no bound is unbounded (an error).
//
// Used for network links (flows over shared links) and for SMs shared by concurrent
// kernels. Knows nothing of either.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace moesim::sim_core {

class MaxMinSolver {
 public:
  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();

  std::size_t add_variable(double weight = 1.0, double bound = kUnbounded);
  std::size_t add_constraint(double capacity);
  // Variable v uses `coefficient` units of constraint c per unit of its value.
  void use(std::size_t constraint, std::size_t variable, double coefficient = 1.0);

  // Solves and returns x_i per variable. Throws std::logic_error on an unbounded variable.
  std::vector<double> solve() const;
  // The same into `x`; with clear(), a solver reused for many small problems (a GPU's
  // link ports) allocates nothing once its buffers have grown.
  void solve(std::vector<double>& x) const;
  // Removes every variable and constraint, keeping the buffers.
  void clear();

 private:
  struct Var {
    double weight, bound;
  };
  struct Use {
    std::size_t var;
    double coef;
  };
  std::vector<Var> vars_;
  std::vector<double> capacity_;
  std::vector<std::vector<Use>> uses_;  // per constraint (the first capacity_.size() in use)
  // solve()'s scratch.
  mutable std::vector<char> fixed_, constrained_, fix_now_;
  mutable std::vector<double> remaining_;
};

}  // namespace moesim::sim_core
