// config/load_trace.hpp: the GPU kernels of a PyTorch-profiler (Kineto) trace file, the
// Chrome trace format torch.profiler's export_chrome_trace writes: {"traceEvents": [...]}
// (or the bare array), each kernel an event with "ph": "X", "cat": "kernel", its "name",
// "ts" and "dur" in microseconds and its stream in args.stream (else "tid"). Kernels are
// classified by calibration::classify_kernel. A file without kernels (a trace recorded
// without ProfilerActivity.CUDA) or an event with a kernel's category but no numeric
// ts/dur is an InputError naming the event's index.
#pragma once

#include <string>
#include <vector>

#include "calibration/kineto_trace.hpp"

namespace moesim::config {

std::vector<calibration::TraceKernel> load_kineto_trace(const std::string& path);

}  // namespace moesim::config
