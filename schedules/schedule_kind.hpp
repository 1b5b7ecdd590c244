// schedules/schedule_kind.hpp: the pipeline schedules a scenario may name. Their
// implementations register beside this table as the engine and schedule issues land.
#pragma once

#include <cstdint>

#include "sim_core/names.hpp"

namespace moesim::schedules {

enum class ScheduleKind { one_f_one_b, interleaved_1f1b, dualpipe, dualpipev, zb_h1 };
const sim_core::NameTable<ScheduleKind>& schedule_names();

// What a step's simulation replays: every layer's forward and backward for every
// microbatch, the zero-bubble family (ZB-H1, DualPipe, DualPipeV) with the backward split
// into input and weight gradients (three passes). The representative simulation walks
// every pipeline stage once, so its kernels, events and memory grow with
//   passes x microbatches x (decoder + MTP layers + virtual stages)
// (a virtual stage costs its transfers, embedding or loss and bookkeeping, about a layer:
// 2-layer Mixtral under DualPipe at 32768 microbatches took 4.8 s and 0.55 GB). At
// kMaxLayerPasses a step takes seconds of wall time and about 1 GB (Mixtral-8x22B,
// DualPipe, 1024 microbatches: 172 k passes, 2.5 s and 0.8 GB); scenarios beyond it are
// refused as input (training.global_batch_size) rather than left to run for minutes. It
// also bounds the chunks per rank (at most passes x microbatches x virtual stages).
// The zero-bubble family (ZB-H1, DualPipe, DualPipeV): the backward split into input and
// weight gradients, three passes per microbatch and chunk.
bool splits_backward(ScheduleKind s);
// The layout's virtual stages each pipeline rank holds: DualPipeV 2 (its V), DualPipe 1
// (its stage of each pipeline; the mirrored chunk belongs to the other pipeline), the
// others vpp (the loader keeps vpp 1 for 1F1B and ZB-H1).
int layout_chunks_per_rank(ScheduleKind s, int vpp);
double layer_passes(ScheduleKind s, std::int64_t microbatches, std::int64_t layers,
                    std::int64_t stages);
// Whether the host synchronizes the whole device after each pipeline transfer: Megatron's
// non-interleaved 1F1B batches its transfers (batch_p2p_comm: the arguments force
// overlap_p2p_comm off without VPP, megatron/training/arguments.py 574-576 at 6a6cd47,
// Megatron-Bridge's CommOverlapConfig likewise) and then, with batch_p2p_sync at its default
// True (core/model_parallel_config.py; workload::Framework::batch_p2p_sync), calls
// torch.cuda.synchronize() (core/pipeline_parallel/p2p_communication.py 394-403 at 6a6cd47,
// 421-424 at d98e8a64). A full-iteration graph replays without the host; the interleaved
// schedule overlaps its transfers instead.
bool syncs_after_transfers(ScheduleKind s, std::int64_t pp, bool full_iteration_graph);
inline constexpr double kMaxLayerPasses = 200'000;

}  // namespace moesim::schedules
