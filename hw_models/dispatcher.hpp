// hw_models/dispatcher.hpp: names of the expert-parallel token dispatchers.
// Their cost models (NCCL all-to-all, DeepEP, HybridEP) arrive with the network issue;
// each will register beside this table.
#pragma once

#include "sim_core/names.hpp"

namespace moesim::hw_models {

enum class Dispatcher { alltoall, allgather, deepep, hybridep };
const sim_core::NameTable<Dispatcher>& dispatcher_names();

// SMs a dispatcher's kernels take when the scenario does not say; 0 = not configurable
// (NCCL picks its own channels). DeepEP: 20 SMs, as DeepSeek-V3 trained with (arXiv
// 2412.19437, section 3.2.2). HybridEP: 32 SMs, as in the GB200 journey's step 11.
int default_dispatcher_sms(Dispatcher d);

}  // namespace moesim::hw_models
