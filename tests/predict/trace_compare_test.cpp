// predict/trace_compare.hpp: which DualPipe node a simulated host op's CPU time belongs to.
#include <catch2/catch.hpp>

#include "predict/trace_compare.hpp"

using namespace moesim;
using workload::Module;

namespace {
schedules::LabelKind kind(Module m, std::uint8_t pass) {
  schedules::LabelKind k;
  k.layer = true;
  k.module = static_cast<std::size_t>(m);
  k.pass = pass;
  return k;
}
}  // namespace

// DeepSeek's profile names a layer's parts attn, dispatch, mlp and combine: the router runs
// with the attention before the dispatch, the EP preprocess with the dispatch, the shared
// expert with the routed ones; F forward, B backward (recompute included), W weight
// gradients. Embedding, head and the work outside the layers have no node.
TEST_CASE("Host ops go to the DualPipe node of their module and pass", "[predict][trace]") {
  using schedules::kBwd, schedules::kFwd, schedules::kNoPass, schedules::kWgrad;
  CHECK(predict::host_node_of(kind(Module::attn, kFwd)) == "attn(F)");
  CHECK(predict::host_node_of(kind(Module::moe_router, kBwd)) == "attn(B)");
  CHECK(predict::host_node_of(kind(Module::moe_preprocess, kFwd)) == "dispatch(F)");
  CHECK(predict::host_node_of(kind(Module::moe_dispatch, kBwd)) == "dispatch(B)");
  CHECK(predict::host_node_of(kind(Module::experts, kWgrad)) == "mlp(W)");
  CHECK(predict::host_node_of(kind(Module::shared_expert, kFwd)) == "mlp(F)");
  CHECK(predict::host_node_of(kind(Module::moe_combine, kBwd)) == "combine(B)");
  CHECK(predict::host_node_of(kind(Module::head, kFwd)).empty());
  CHECK(predict::host_node_of(kind(Module::attn, kNoPass)).empty());
  CHECK(predict::host_node_of(schedules::LabelKind{}).empty());
}
