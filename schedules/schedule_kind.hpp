// schedules/schedule_kind.hpp: the pipeline schedules a scenario may name. Their
// implementations register beside this table as the engine and schedule issues land.
#pragma once

#include "sim_core/names.hpp"

namespace moesim::schedules {

enum class ScheduleKind { one_f_one_b, interleaved_1f1b, dualpipe, dualpipev, zb_h1 };
const sim_core::NameTable<ScheduleKind>& schedule_names();

}  // namespace moesim::schedules
