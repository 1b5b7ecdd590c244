// calibration/ep_fit.hpp: the fraction of NVLink or network capacity an EP library's
// kernels reach, fitted from one published bandwidth of its benchmark.
//
// The flow model of the dispatch and combine kernels (hw_models/ep_flows.hpp) scales
// the links by the library's fractions. For one measured point (ranks, direction,
// bytes per element, bandwidth as the benchmark counts it: NVLink or RDMA) the fitter
// finds the fraction of the given link kind at which the model's bandwidth equals the
// measurement, the other fraction held (bisection on [0.01, 1]; the bandwidth rises
// with the fraction). Points and roles: calibration/measurements/ep-*.json.
#pragma once

#include <optional>

#include "hw_models/ep_flows.hpp"
#include "hw_models/system.hpp"

namespace moesim::calibration {

struct EpPoint {
  hw_models::EpBenchmark bench;
  int gpus_per_domain = 8;
  bool rdma = false;  // the figure is the RDMA bandwidth (else NVLink)
  double GBps = 0;
};

// The model's bandwidth for the point, as the benchmark counts it.
double model_ep_GBps(const hw_models::SystemSpec& s, const hw_models::EpFractions& f,
                     const EpPoint& p);

// Fits f.network when `network` is true, else f.nvlink; throws std::invalid_argument
// when no fraction in [0.01, 1] reproduces the point.
double fit_ep_fraction(const hw_models::SystemSpec& s, hw_models::EpFractions f, bool network,
                       const EpPoint& p);

// The SM throughput of a dispatch kernel from two points in its SM-bound regime, one per
// element size (BF16 and FP8 at the same SM count): per SM a token copy of B bytes takes
// copy_us + B / sm_GBps, so with X = bandwidth / SMs, B / X = copy_us + B / sm_GBps for
// both points; two equations, two unknowns. Throws std::invalid_argument when they do
// not give positive values. Combine (one element size) fits sm_GBps alone with copy_us 0.
struct SmFit {
  double copy_us = 0, sm_GBps = 0;
};
SmFit fit_ep_sm(const EpPoint& a, const EpPoint& b);
SmFit fit_ep_sm(const EpPoint& combine);

// The per-SM rate (copy_us 0) at which the model reproduces one point, the link fractions
// of `f` held (f's own SM limit is ignored): for tables whose per-SM throughput depends
// on the EP size (EpBandwidth::sm_by_ranks), one point per size and payload. Empty when
// the links alone keep the model at or below the point (not SM-bound there).
std::optional<double> fit_ep_sm_rate(const hw_models::SystemSpec& s, hw_models::EpFractions f,
                                     const EpPoint& p);

// The rate one peer connection carries (EpFractions::peer_GBps) at which the model
// reproduces the point, the rest of `f` held; empty when the model without the cap is at
// or below the point (the connection does not bind there).
std::optional<double> fit_ep_peer_rate(const hw_models::SystemSpec& s, hw_models::EpFractions f,
                                       const EpPoint& p);

// The fixed cost of DeepEP's low-latency kernels from one measured latency: what the
// flows do not account for, latency - makespan (microseconds, >= 0).
double fit_ep_fixed_us(const hw_models::SystemSpec& s, const hw_models::EpFractions& f, EpPoint p,
                       double latency_us);

}  // namespace moesim::calibration
