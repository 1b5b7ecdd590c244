#include <catch2/catch.hpp>

#include "hw_models/dispatcher.hpp"
#include "hw_models/system.hpp"

using namespace moesim::hw_models;

TEST_CASE("Name tables parse, print and list", "[hw_models]") {
  CHECK(dtype_names().find("mxfp8") == Dtype::mxfp8);
  CHECK_FALSE(dtype_names().find("fp16").has_value());
  CHECK(dtype_names().name(Dtype::bf16) == "bf16");
  CHECK(dispatcher_names().known() == "alltoall, allgather, deepep, hybridep");
  CHECK(default_dispatcher_sms(Dispatcher::deepep) == 20);
  CHECK(default_dispatcher_sms(Dispatcher::alltoall) == 0);
}
