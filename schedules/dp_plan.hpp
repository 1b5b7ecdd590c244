// schedules/dp_plan.hpp: the data-parallel traffic of one virtual stage: which
// parameters each gradient reduction and parameter all-gather carries, and after (or
// before) which layer of the stage it runs.
//
// Megatron-Core DDP (megatron/core/distributed): a model chunk's parameters live in
// contiguous buffers, dense and expert apart (the expert buffer reduces over the
// expert-DP group), each split into buckets of at least `bucket_size` parameters filled
// in backward order. Default bucket_size max(40e6, 1e6 x the buffer's DP size)
// parameters (DistributedDataParallelConfig.bucket_size, Megatron-Core API docs).
// Only the first pipeline rank's first chunk is split: Megatron-Core's DDP sets
// bucket_size None on every pipeline rank above 0 (distributed_data_parallel.py: their
// DP traffic "is not on the critical path"), and megatron/training/training.py builds
// every model chunk after the first, and with --overlap-param-gather-with-optimizer-step
// every chunk, with disable_bucketing; without --overlap-grad-reduce DDP sets bucket_size
// None on every rank (distributed_data_parallel.py 70-72 at cd4afffa). Such a chunk reduces
// its dense and its expert gradients in one collective each after its last backward, and
// gathers each in one.
//   --overlap-grad-reduce: a bucket's reduce-scatter (all-reduce without the
//     distributed optimizer) starts as soon as the last microbatch's backward has
//     produced all of its gradients, beside the rest of that backward.
//   --overlap-param-gather (distributed optimizer): a bucket's first layer waits for its
//     gather in the first forward of the chunk. Aligned (framework.align_param_gather, the
//     interleaved schedule's default), the gathers run ahead of the forward; unaligned
//     (Megatron's 1F1B), the forward pre-hook of the bucket's first module dispatches its
//     gather there, after the compute stream, and the next bucket's behind it
//     (rank_program_dp.cpp gather_at_first_use).
// moesim's buckets end at layer boundaries (layout items: a decoder or MTP layer, the
// embedding, the output layer): a bucket closes with the item that brings it to the
// bucket size, or at the stage's first item. Filled in backward order, a bucket's last
// item in backward order is its first in forward order, so one table serves both: the
// buckets closing at an item are reduced after its backward and gathered before its
// forward.
//
// Megatron-FSDP (parallelism.fsdp; sharding optim_grads_params, the FSDP unit a layer):
// every item is its own unit; its parameters are all-gathered before its forward and its
// backward in every microbatch, prefetching one unit ahead, and its gradients are
// reduce-scattered after every backward (Megatron-LM PR #7186: Megatron-FSDP reduces
// gradients during every backward; only hybrid sharding's outer DP waits for the last
// microbatch).
#pragma once

#include <vector>

#include "schedules/pp_layout.hpp"
#include "schedules/stage_params.hpp"
#include "workload/model_config.hpp"
#include "workload/options.hpp"

namespace moesim::schedules {

// Megatron's default bucket size (parameters) for a buffer reduced over `dp` ranks.
double default_bucket_params(std::int64_t dp);

struct DpPlan {
  std::vector<StageParams> item;    // each stage item's parameters (the FSDP units)
  std::vector<StageParams> bucket;  // per item: the buckets that close at it (zero: none)
};

DpPlan dp_plan(const workload::ModelConfig& m, const workload::Parallelism& p,
               const workload::Framework& fw, const VirtualStage& stage, std::int64_t padded_vocab,
               ScheduleKind schedule, const workload::Lora* trained = nullptr);

}  // namespace moesim::schedules
