// Engine cross-checks against closed forms; each expected value is derived in a comment.
#include <catch2/catch.hpp>

#include <vector>

#include "sim_core/gpu.hpp"
#include "sim_core/host.hpp"
#include "sim_core/maxmin.hpp"

using namespace moesim::sim_core;

namespace {

struct Recorder final : EventHandler {
  std::vector<std::pair<Time, std::uint64_t>> seen;
  Engine* e = nullptr;
  void on_event(std::uint64_t arg) override { seen.emplace_back(e->now(), arg); }
};

struct Finished : Observer {
  std::vector<std::pair<std::uint32_t, Time>> ends;  // (label, end)
  std::vector<std::pair<std::uint32_t, Time>> starts;
  void kernel_done(int, int, const Kernel& k, Time start, Time end) override {
    ends.emplace_back(k.label, end);
    starts.emplace_back(k.label, start);
  }
  Time end_of(std::uint32_t label) const {
    for (auto& [l, t] : ends)
      if (l == label) return t;
    return Time::max();
  }
  Time start_of(std::uint32_t label) const {
    for (auto& [l, t] : starts)
      if (l == label) return t;
    return Time::max();
  }
};

Kernel kernel(std::uint32_t label, double seconds, int sms = 0, bool reserved = false) {
  Kernel k;
  k.label = label;
  k.work_s = seconds;
  k.sms = sms;
  k.reserved = reserved;
  return k;
}

// A fixed list of host ops.
struct ListProgram : HostProgram {
  std::vector<HostOp> ops;
  std::size_t i = 0;
  const HostOp* next() override { return i == ops.size() ? nullptr : &ops[i++]; }
};

struct Rig {
  Engine engine;
  EventTable events{engine};
  RendezvousTable rv;
  Finished obs;
  Gpu gpu{engine, events, rv, 0, 132, "gpu0"};
  Rig() { gpu.set_observer(&obs); }
};

}  // namespace

TEST_CASE("Events run in time order, ties in insertion order", "[sim_core][engine]") {
  Engine e;
  Recorder r;
  r.e = &e;
  e.at(Time::us(5), &r, 1);
  e.at(Time::us(2), &r, 2);
  e.at(Time::us(5), &r, 3);
  e.at(Time::us(2), &r, 4);
  const auto stats = e.run();
  REQUIRE(r.seen.size() == 4);
  CHECK(r.seen[0].second == 2);
  CHECK(r.seen[1].second == 4);
  CHECK(r.seen[2].second == 1);
  CHECK(r.seen[3].second == 3);
  CHECK(stats.end == Time::us(5));
  CHECK(stats.events == 4);
  CHECK_THROWS_AS(e.at(Time::us(1), &r, 0), std::logic_error);
}

TEST_CASE("Max-min: two flows on one link each get half", "[sim_core][maxmin]") {
  MaxMinSolver s;
  const auto link = s.add_constraint(100);
  const auto a = s.add_variable();
  const auto b = s.add_variable();
  s.use(link, a);
  s.use(link, b);
  const auto x = s.solve();
  CHECK(x[a] == Approx(50));
  CHECK(x[b] == Approx(50));
}

TEST_CASE("Max-min: the classic three-flow line network", "[sim_core][maxmin]") {
  // Links L1 (cap 1) and L2 (cap 2). Flow A crosses both, B only L1, C only L2.
  // Level rises: L1 saturates first at 1/2 (A and B) -> A = B = 0.5; then C takes the
  // rest of L2: 2 - 0.5 = 1.5.
  MaxMinSolver s;
  const auto l1 = s.add_constraint(1), l2 = s.add_constraint(2);
  const auto A = s.add_variable(), B = s.add_variable(), C = s.add_variable();
  s.use(l1, A);
  s.use(l2, A);
  s.use(l1, B);
  s.use(l2, C);
  const auto x = s.solve();
  CHECK(x[A] == Approx(0.5));
  CHECK(x[B] == Approx(0.5));
  CHECK(x[C] == Approx(1.5));
}

TEST_CASE("Max-min: weights, bounds and coefficients", "[sim_core][maxmin]") {
  // One link of 90: weight-2 flow gets twice the weight-1 flow: 60 / 30. With a bound of
  // 20 on the weight-2 flow, it gets 20 and the other takes the remaining 70.
  MaxMinSolver s;
  const auto l = s.add_constraint(90);
  const auto a = s.add_variable(2), b = s.add_variable(1);
  s.use(l, a);
  s.use(l, b);
  auto x = s.solve();
  CHECK(x[a] == Approx(60));
  CHECK(x[b] == Approx(30));
  MaxMinSolver t;
  const auto l2 = t.add_constraint(90);
  const auto c = t.add_variable(2, 20), d = t.add_variable(1);
  t.use(l2, c);
  t.use(l2, d, 1);
  x = t.solve();
  CHECK(x[c] == Approx(20));
  CHECK(x[d] == Approx(70));
  // A flow crossing a link twice (coefficient 2) of capacity 10 alone: 5.
  MaxMinSolver u;
  const auto l3 = u.add_constraint(10);
  const auto e = u.add_variable();
  u.use(l3, e, 2);
  CHECK(u.solve()[e] == Approx(5));
  MaxMinSolver bad;
  bad.add_variable();
  CHECK_THROWS_AS(bad.solve(), std::logic_error);
}

TEST_CASE("SM sharing: two full-GPU kernels split the SMs and both finish at 2x",
          "[sim_core][sm]") {
  // Each needs 1 ms alone on all 132 SMs; together each gets 66 SMs (rate 1/2) and both
  // finish at 2 ms. The max-min solver gives the same split: one constraint of 132 SMs.
  Rig r;
  const int s0 = r.gpu.add_stream("a"), s1 = r.gpu.add_stream("b");
  r.gpu.launch(s0, kernel(1, 1e-3));
  r.gpu.launch(s1, kernel(2, 1e-3));
  r.engine.run();
  CHECK(r.obs.end_of(1) == Time::ms(2));
  CHECK(r.obs.end_of(2) == Time::ms(2));
  MaxMinSolver m;
  const auto sms = m.add_constraint(132);
  const auto a = m.add_variable(1, 132), b = m.add_variable(1, 132);
  m.use(sms, a);
  m.use(sms, b);
  CHECK(m.solve()[a] == Approx(66));
}

TEST_CASE("SM sharing: a reserved communication kernel slows compute mid-kernel",
          "[sim_core][sm]") {
  // 148-SM GPU. Compute kernel: 1 s alone on 148 SMs. A DeepEP-like kernel takes 24 SMs for
  // 1 s from t = 0. Compute runs at 124/148 until t = 1 s, having done 124/148 of its work;
  // the remaining 24/148 s run at full rate: end = 1 + 24/148 = 1.162162... s.
  Engine e;
  EventTable ev{e};
  RendezvousTable rv;
  Finished obs;
  Gpu gpu{e, ev, rv, 0, 148, "gb200"};
  gpu.set_observer(&obs);
  const int c = gpu.add_stream("compute"), m = gpu.add_stream("comm");
  gpu.launch(m, kernel(7, 1.0, 24, true));
  gpu.launch(c, kernel(8, 1.0));
  e.run();
  CHECK(obs.end_of(7) == Time::ms(1000));
  CHECK(obs.end_of(8).seconds() == Approx(1.0 + 24.0 / 148.0).epsilon(1e-9));
}

TEST_CASE("SM sharing: a persistent kernel keeps its SMs from a later communication kernel",
          "[sim_core][sm]") {
  // 132-SM GPU. A persistent GEMM (holds_sms) needs 10 ms alone and starts at 0 on all 132
  // SMs. A reserved 32-SM communication kernel of 2 ms is launched at 1 ms: no SM is free,
  // so it waits (rate 0) until the GEMM ends at 10 ms and ends at 12 ms; the time line shows
  // it from 10 ms, when it got SMs (a profiler's start). The GEMM is never slowed. Without
  // holds_sms the communication kernel takes its 32 SMs at once: it ends at 3 ms and the
  // GEMM, at 100/132 for those 2 ms, ends at 10 + 2 x 32/132 = 10.4848... ms.
  for (const bool holds : {true, false}) {
    INFO("holds_sms " << holds);
    Rig r;
    const int c = r.gpu.add_stream("compute"), m = r.gpu.add_stream("comm");
    Kernel g = kernel(1, 10e-3);
    g.holds_sms = holds;
    r.gpu.launch(c, g);
    r.gpu.launch(m, kernel(2, 2e-3, 32, true), Time::ms(1));
    r.engine.run();
    if (holds) {
      CHECK(r.obs.end_of(1) == Time::ms(10));
      CHECK(r.obs.start_of(2) == Time::ms(10));  // it runs from when it gets SMs
      CHECK(r.obs.end_of(2) == Time::ms(12));
    } else {
      CHECK(r.obs.end_of(2) == Time::ms(3));
      CHECK(r.obs.end_of(1).seconds() == Approx(10e-3 + 2e-3 * 32.0 / 132.0).epsilon(1e-9));
    }
  }
}

TEST_CASE("SM sharing: a persistent kernel started beside communication grows when it ends",
          "[sim_core][sm]") {
  // 132 SMs. A reserved 32-SM kernel runs 0-2 ms. A persistent GEMM of 10 ms alone starts
  // at 0 on the 100 SMs left (rate 100/132): by 2 ms it has done 200/132 ms of work; then
  // it takes all 132 SMs and ends at 2 + 10 - 200/132 = 10.4848... ms. A second reserved
  // kernel launched at 5 ms waits for the GEMM's end and runs 10.4848... to 12.4848... ms.
  Rig r;
  const int c = r.gpu.add_stream("compute"), m = r.gpu.add_stream("comm");
  r.gpu.launch(m, kernel(1, 2e-3, 32, true));
  Kernel g = kernel(2, 10e-3);
  g.holds_sms = true;
  r.gpu.launch(c, g);
  r.gpu.launch(m, kernel(3, 2e-3, 32, true), Time::ms(5));
  r.engine.run();
  const double gemm_end = 2e-3 + 10e-3 - 2e-3 * 100.0 / 132.0;
  CHECK(r.obs.end_of(1) == Time::ms(2));
  CHECK(r.obs.end_of(2).seconds() == Approx(gemm_end).epsilon(1e-9));
  CHECK(r.obs.end_of(3).seconds() == Approx(gemm_end + 2e-3).epsilon(1e-9));
}

TEST_CASE("Link ports: transfers through one port share it, through others they do not",
          "[sim_core][ports]") {
  // Two copy-engine transfers (no SMs) that each fill port 0 alone: 1 ms each alone,
  // together each gets half the port and both end at 2 ms. A third on port 1 is not slowed.
  Rig r;
  const int a = r.gpu.add_stream("dp"), b = r.gpu.add_stream("ep"), c = r.gpu.add_stream("pp");
  Kernel ka = kernel(1, 1e-3, -1), kb = kernel(2, 1e-3, -1), kc = kernel(3, 1e-3, -1);
  ka.port_load[0] = 1;
  kb.port_load[0] = 1;
  kc.port_load[1] = 1;
  r.gpu.launch(a, ka);
  r.gpu.launch(b, kb);
  r.gpu.launch(c, kc);
  r.engine.run();
  CHECK(r.obs.end_of(1) == Time::ms(2));
  CHECK(r.obs.end_of(2) == Time::ms(2));
  CHECK(r.obs.end_of(3) == Time::ms(1));
  // Two 1-ms transfers on one port with loads a and b: the end of each.
  const auto pair = [](float load_x, float load_y) {
    Rig h;
    const int x = h.gpu.add_stream("x"), y = h.gpu.add_stream("y");
    Kernel kx = kernel(1, 1e-3, -1), ky = kernel(2, 1e-3, -1);
    kx.port_load[2] = load_x;
    ky.port_load[2] = load_y;
    h.gpu.launch(x, kx);
    h.gpu.launch(y, ky);
    h.engine.run();
    return std::make_pair(h.obs.end_of(1).seconds(), h.obs.end_of(2).seconds());
  };
  // Half loads fit together: no slowdown.
  CHECK(pair(0.5f, 0.5f).first == Approx(1e-3));
  // A 3/4 load next to a 1/2 load: max-min gives both rate 0.8 (0.75 x 0.8 + 0.5 x 0.8
  // = 1), and both end at 1 / 0.8 = 1.25 ms.
  const auto [u, w] = pair(0.75f, 0.5f);
  CHECK(u == Approx(1.25e-3).epsilon(1e-6));
  CHECK(w == Approx(1.25e-3).epsilon(1e-6));
}

TEST_CASE("Two-stream overlap: half-GPU kernels run side by side", "[sim_core][sm]") {
  // 2 ms on 66 SMs and 3 ms on 66 SMs fit together on 132 SMs: no slowdown, the step
  // ends at max(2, 3) = 3 ms; serialized on one stream it would be 5 ms.
  Rig r;
  const int a = r.gpu.add_stream("a"), b = r.gpu.add_stream("b");
  r.gpu.launch(a, kernel(1, 2e-3, 66));
  r.gpu.launch(b, kernel(2, 3e-3, 66));
  r.engine.run();
  CHECK(r.obs.end_of(1) == Time::ms(2));
  CHECK(r.obs.end_of(2) == Time::ms(3));
  Rig s;
  const int one = s.gpu.add_stream("one");
  s.gpu.launch(one, kernel(1, 2e-3, 66));
  s.gpu.launch(one, kernel(2, 3e-3, 66));
  s.engine.run();
  CHECK(s.obs.end_of(2) == Time::ms(5));
}

TEST_CASE("Host-bound and GPU-bound launch streams", "[sim_core][host]") {
  // N kernels of g on the GPU, each launch costing c on the host.
  // Host-bound (c > g): the last kernel launches at N c and ends at N c + g.
  // GPU-bound (c < g): the first starts at c, then they run back to back: c + N g.
  for (const auto& [c_us, g_us] : {std::pair{10, 4}, std::pair{4, 10}}) {
    Rig r;
    const int s = r.gpu.add_stream("compute");
    ListProgram p;
    const int n = 50;
    for (int i = 0; i < n; ++i) {
      HostOp op;
      op.kind = HostOp::Kind::launch;
      op.cpu = Time::us(c_us);
      op.gpu = &r.gpu;
      op.stream = s;
      op.kernel = kernel(static_cast<std::uint32_t>(i), g_us * 1e-6);
      p.ops.push_back(op);
    }
    HostThread h{r.engine, r.events, 0, "host0", p};
    h.start(Time::zero());
    r.engine.run();
    const Time expect = c_us > g_us ? Time::us(n * c_us + g_us) : Time::us(c_us + n * g_us);
    CHECK(r.obs.end_of(n - 1) == expect);
    CHECK(h.finished());
    CHECK(h.busy() == Time::us(n * c_us));
  }
}

TEST_CASE("A device-to-host sync holds the host until the GPU gets there", "[sim_core][host]") {
  // Launch A (1 ms GPU) at 5 us, then wait on A's event (host resumes at 1.005 ms), then
  // launch B after 5 us more: B launches at 1.010 ms and ends at 1.010 + 0.002 ms.
  Rig r;
  const int s = r.gpu.add_stream("compute");
  const EventId done_a = r.events.create();
  ListProgram p;
  HostOp a;
  a.kind = HostOp::Kind::launch;
  a.cpu = Time::us(5);
  a.gpu = &r.gpu;
  a.stream = s;
  a.kernel = kernel(1, 1e-3);
  a.kernel.record = done_a;
  HostOp w;
  w.kind = HostOp::Kind::wait;
  w.event = done_a;
  HostOp b = a;
  b.kernel = kernel(2, 2e-6);
  p.ops = {a, w, b};
  HostThread h{r.engine, r.events, 0, "host0", p};
  h.start(Time::zero());
  r.engine.run();
  CHECK(r.obs.end_of(1) == Time::us(1005));
  CHECK(r.obs.start_of(2) == Time::us(1010));
  CHECK(r.obs.end_of(2) == Time::us(1012));
}

TEST_CASE("Cross-stream events and rendezvous", "[sim_core][gpu]") {
  // Stream b's kernel waits on an event recorded by stream a's 3 ms kernel: starts at 3 ms.
  // Two GPUs' rendezvous kernels (a send/recv pair) start together when the later arrives.
  Engine e;
  EventTable ev{e};
  RendezvousTable rv;
  Finished o0, o1;
  Gpu g0{e, ev, rv, 0, 132, "g0"}, g1{e, ev, rv, 1, 132, "g1"};
  g0.set_observer(&o0);
  g1.set_observer(&o1);
  const int a = g0.add_stream("a"), b = g0.add_stream("b");
  const int c = g1.add_stream("c");
  Kernel k1 = kernel(1, 3e-3, 66);
  k1.record = ev.create();
  Kernel k2 = kernel(2, 1e-3, 66);
  k2.waits[0] = k1.record;
  g0.launch(b, k2);
  g0.launch(a, k1);
  // Rendezvous: g0 stream b sends after k2 (ends 4 ms); g1 is ready at 0.
  const RendezvousId pair = rv.create(2);
  Kernel send = kernel(3, 1e-3, 8, true);
  send.rendezvous = pair;
  Kernel recv = kernel(4, 1e-3, 8, true);
  recv.rendezvous = pair;
  g0.launch(b, send);
  g1.launch(c, recv);
  e.run();
  CHECK(o0.start_of(2) == Time::ms(3));
  CHECK(o0.start_of(3) == Time::ms(4));
  CHECK(o1.start_of(4) == Time::ms(4));
  CHECK(o1.end_of(4) == Time::ms(5));
}

TEST_CASE("A missing producer is reported as what waits on what", "[sim_core][engine]") {
  Rig r;
  r.gpu.set_label_names([](std::uint32_t l) { return "fc" + std::to_string(l); });
  const int s = r.gpu.add_stream("compute");
  Kernel k = kernel(1, 1e-3);
  k.waits[0] = r.events.create();  // nothing records it
  r.gpu.launch(s, k);
  CHECK_THROWS_WITH(r.engine.run(),
                    Catch::Contains("gpu0/compute: kernel 'fc1' waits on device event 0"));
  Rig q;
  const int t = q.gpu.add_stream("pp");
  Kernel lone = kernel(2, 1e-3);
  lone.rendezvous = q.rv.create(2);
  q.gpu.launch(t, lone);
  CHECK_THROWS_WITH(q.engine.run(), Catch::Contains("1 of 2 participants arrived"));
}

TEST_CASE("Coalescing: kernels of one class queued behind a starting kernel run as one",
          "[sim_core][gpu]") {
  // Three class-7 kernels of 1, 2 and 3 ms launched at 1 ms on one stream (the host ahead
  // of the GPU, as in a step): each would start when the one before ends, so one kernel of
  // 6 ms ends at 7 ms, reported once; the third's event completes then. Beside a reserved
  // 20 ms kernel on 66 SMs of another stream they get the other 66 of the 132 they want,
  // rate 1/2: 6 ms of work ends at 13 ms, merged or not.
  for (const bool beside : {false, true}) {
    Rig r;
    const int s = r.gpu.add_stream("compute");
    const int o = r.gpu.add_stream("other");
    const EventId last = r.events.create();
    for (int i = 0; i < 3; ++i) {
      Kernel k = kernel(static_cast<std::uint32_t>(i + 1), (i + 1) * 1e-3);
      k.merge_class = 7;
      k.launch = Time::ms(1);
      if (i == 2) k.record = last;
      r.gpu.launch(s, k);
    }
    if (beside) r.gpu.launch(o, kernel(9, 20e-3, 66, true));
    r.engine.run();
    const Time end = beside ? Time::ms(13) : Time::ms(7);
    CHECK(r.obs.end_of(1) == end);
    CHECK(r.obs.end_of(2) == Time::max());  // absorbed into kernel 1
    CHECK(r.events.done(last));
    CHECK(r.events.done_at(last) == end);
  }
}

TEST_CASE("Coalescing stops at a later launch, another class, a pending wait or an event",
          "[sim_core][gpu]") {
  // Each case: A (1 ms, class 1) and B (2 ms) launched at 1 ms on one stream; B ends at
  // 4 ms either way, but is simulated (reported) on its own.
  const auto run = [](auto&& setup) {
    Rig r;
    const int s = r.gpu.add_stream("compute");
    Kernel a = kernel(1, 1e-3), b = kernel(2, 2e-3);
    a.merge_class = b.merge_class = 1;
    a.launch = b.launch = Time::ms(1);
    setup(r, a, b);
    r.gpu.launch(s, a);
    r.gpu.launch(s, b);
    r.engine.run();
    return r.obs.end_of(2);
  };
  // B launched after A started (the host was late): starts at A's end all the same.
  CHECK(run([](Rig&, Kernel&, Kernel& b) { b.launch = Time::us(1500); }) == Time::ms(4));
  CHECK(run([](Rig&, Kernel&, Kernel& b) { b.merge_class = 2; }) == Time::ms(4));
  CHECK(run([](Rig&, Kernel&, Kernel& b) { b.sms = 66; }) == Time::ms(4));  // another SM demand
  // A records an event others may wait for at its own end.
  CHECK(run([](Rig& r, Kernel& a, Kernel&) { a.record = r.events.create(); }) == Time::ms(4));
  // B waits for an event that a copy on another stream completes at 1.5 ms, after A starts.
  CHECK(run([](Rig& r, Kernel&, Kernel& b) {
          const int o = r.gpu.add_stream("other");
          Kernel c = kernel(3, 1.5e-3, -1);
          c.record = r.events.create();
          b.waits[0] = c.record;
          r.gpu.launch(o, c);
        }) == Time::ms(4));
  // Otherwise B is absorbed: not reported on its own.
  CHECK(run([](Rig&, Kernel&, Kernel&) {}) == Time::max());
}
