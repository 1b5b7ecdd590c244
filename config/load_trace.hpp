// config/load_trace.hpp: the GPU kernels of a PyTorch-profiler (Kineto) trace file, the
// Chrome trace format torch.profiler's export_chrome_trace writes: {"traceEvents": [...]}
// (or the bare array), each kernel an event with "ph": "X", "cat": "kernel", its "name",
// "ts" and "dur" in microseconds (returned as seconds from the first kernel). Kernels are
// classified by calibration::classify_kernel. A file without kernels (a trace recorded
// without ProfilerActivity.CUDA), a kernel event without its name or numeric ts / dur, or
// kernels of more than one device (pid) is an InputError naming the event's index. The
// host ranges of schedule nodes (calibration::HostNode: "user_annotation" events named
// "<part>(F|B|W)", "ph": "X", numeric ts and dur) are summed per name; other annotations
// are passed by.
#pragma once

#include <string>
#include <vector>

#include "calibration/kineto_trace.hpp"

namespace moesim::config {

calibration::KinetoTrace load_kineto_trace(const std::string& path);

}  // namespace moesim::config
