// hw_models/flow_cache.hpp: a search's shared flow results are exactly what each
// simulation would compute alone, and one cache serves one system.
#include <catch2/catch.hpp>

#include "config/load.hpp"
#include "hw_models/ep_flows.hpp"
#include "hw_models/flow_cache.hpp"
#include "hw_models/flow_comm.hpp"

using namespace moesim;

TEST_CASE("FlowCache: shared collective shapes and EP flows equal the uncached ones",
          "[hw_models][flows][cache]") {
  const auto s = config::load_system_preset("gb200-nvl72");
  hw_models::FlowCache cache;
  const hw_models::CommGroup ep{64, true, 1}, dp{16, true, 64};
  for (const std::int64_t pp : {1, 4}) {
    const hw_models::FlowComm alone(s, 1024, 32, pp);
    const hw_models::FlowComm first(s, 1024, 32, pp, &cache), second(s, 1024, 32, pp, &cache);
    for (const auto* c : {&first, &second}) {
      CHECK(c->all_to_all(3e8, ep) == alone.all_to_all(3e8, ep));
      CHECK(c->reduce_scatter(2e9, dp) == alone.reduce_scatter(2e9, dp));
      CHECK(c->send_recv(5e7, {2, true, 256}) == alone.send_recv(5e7, {2, true, 256}));
    }
  }
  // Three shapes for each of two stage sizes.
  CHECK(cache.size() == 6);

  const hw_models::Topology topo(s, 64, 32);
  hw_models::EpBenchmark b;
  b.ranks = 64;
  b.sms = 24;
  const auto t = hw_models::ep_library_time(s, topo, hw_models::Dispatcher::hybridep, b);
  CHECK(cache.ep_time(s, topo, hw_models::Dispatcher::hybridep, b, 1).time_s == t.time_s);
  CHECK(cache.ep_time(s, topo, hw_models::Dispatcher::hybridep, b, 1).time_s == t.time_s);
  CHECK(cache.size() == 7);
  b.combine = true;  // another key
  CHECK(cache.ep_time(s, topo, hw_models::Dispatcher::hybridep, b, 1).time_s ==
        hw_models::ep_library_time(s, topo, hw_models::Dispatcher::hybridep, b).time_s);
  CHECK(cache.size() == 8);

  // Another system through the same cache is a programming error, not a wrong answer.
  const auto h100 = config::load_system_preset("h100");
  const hw_models::FlowComm other(h100, 64, 8, 1, &cache);
  CHECK_THROWS_AS(other.all_to_all(1e8, {8, false, 1}), std::logic_error);
}
