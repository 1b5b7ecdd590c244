// sim_core/gpu.hpp: GPU streams on a fluid SM pool, device events and rendezvous.
//
// A stream runs its kernels in launch order. The head kernel starts at the latest of:
// its launch time (host clock, possibly ahead of the engine), the end of the previous
// kernel, the completion of every device event it waits on, and, for a kernel that is
// part of a rendezvous (a collective or a send/recv pair), the arrival of every
// participant at the head of its stream.
//
// SM sharing (fluid): a kernel declares the SMs it runs on at full speed (`sms`) and its
// duration alone (`work_s`). A persistent kernel (`holds_sms`: GEMMs and attention, whose
// CTAs stay resident and loop over the tiles) keeps the SMs it was given until it ends;
// reserved kernels (communication: DeepEP, HybridEP, NCCL) take theirs next, in start
// order, from the SMs no persistent kernel holds; compute kernels share what is left
// max-min fairly (a persistent one from what it holds), capped at what each wants. So a
// communication kernel launched while a persistent GEMM fills the GPU waits for the GEMM
// to end, as on the hardware: compute kernels use every SM unless told to leave some
// (TransformerEngine issue 1459: "we explicitly tell compute kernels (GEMMs, LayerNorm,
// etc) not to use all" of them, the SM margins NVTE_EXT_MARGIN_SM, TE pull request 713,
// "an additional carveout to all the gemms for DP", and NVTE_FWD/BWD_LAYERNORM_SM_MARGIN;
// CUTLASS's Blackwell cluster launch control lets a persistent GEMM use the SMs another
// kernel leaves, not hand its own back). A persistent kernel started beside reserved ones
// grows into their SMs when they end. A kernel given a SMs of the s it wants progresses at
// rate a / s (0 while it waits for SMs); rates change only when a kernel starts or ends,
// and progress is carried across the change (remaining work -= rate x elapsed), never
// restarted.
//
// Coalescing: a kernel with a caller-given class (`merge_class`, 0: none) absorbs, when
// it starts, the kernels queued right behind it on its stream that have its class, its
// SM demand, no reservation, no hold on their SMs (a persistent kernel absorbing its
// neighbours would hold the SMs for the whole run), no port loads and no rendezvous,
// were launched by then and wait for nothing left undone. Each of them would start the
// moment the one before it ended (launched, inputs ready, the stream in order) and,
// wanting the same SMs, run at the same fluid rate, so the sum ends when the last would:
// one start, one end event and one share computation instead of one each. The absorbed
// kernels' event (the last may record one) completes at the merged end; absorbing stops
// after a kernel that records one. The caller gives one class to kernels its observer
// cannot tell apart in a time line (the step simulation: the same module and pass), and
// none when it keeps every kernel (a trace). Only the rounding of the ends to the
// picosecond differs.
//
// Link ports (fluid): a GPU has kPorts ports of capacity 1 (the caller maps them to its
// links: NVLink out/in, network out/in). A transfer kernel declares the fraction of each
// port it fills when it runs at full speed (`port_load`, from its bytes over the port,
// its duration alone and the port's capacity). Kernels on one port share it: their rates
// are the max-min fair solution of sum_k rate_k x load_kp <= 1 for every port p, each
// rate capped by what its SMs allow (sim_core/maxmin.hpp). So a DP reduce-scatter and an
// EP all-to-all that leave through the same NVLink port slow each other down.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "sim_core/engine.hpp"
#include "sim_core/maxmin.hpp"

namespace moesim::sim_core {

using EventId = std::uint32_t;
using RendezvousId = std::uint32_t;
inline constexpr EventId kNoEvent = std::numeric_limits<EventId>::max();
inline constexpr RendezvousId kNoRendezvous = std::numeric_limits<RendezvousId>::max();

struct Kernel {
  std::uint32_t label = 0;        // name id, resolved by the caller's label table
  std::uint8_t category = 0;      // caller-defined class (compute, communication, ...)
  std::uint16_t parts = 1;        // the caller's kernels this one stands for (run back to back)
  std::uint16_t merge_class = 0;  // coalescing class (header); 0: never coalesced
  std::uint32_t tag = 0;   // the caller's context for traces (0: none); the engine never reads it
  double work_s = 0;       // duration alone on `sms` SMs
  int sms = 0;             // SMs for full speed; 0 = all of the GPU; < 0 = none (copy
                           // engines, network): always runs at full rate
  bool reserved = false;   // takes its SMs before compute kernels share the rest
  bool holds_sms = false;  // persistent: keeps the SMs it was given until it ends (header)
  Time launch;             // host time of the launch
  std::array<EventId, 3> waits{kNoEvent, kNoEvent, kNoEvent};
  EventId record = kNoEvent;  // completed when this kernel ends
  RendezvousId rendezvous = kNoRendezvous;
  static constexpr int kPorts = 4;
  std::array<float, kPorts> port_load{};  // fraction of each port at full speed (0: unused)
  bool uses_ports() const {
    for (float l : port_load)
      if (l > 0) return true;
    return false;
  }
};

class Observer {
 public:
  virtual ~Observer() = default;
  // `start`: when it first ran; a kernel that waited for SMs held by a persistent one
  // starts when it got them (as a profiler sees it), not when it reached its stream's head.
  virtual void kernel_done(int /*gpu*/, int /*stream*/, const Kernel& /*k*/, Time /*start*/,
                           Time /*end*/) {}
  // `tag`: the op's kernel's (HostOp::kernel.tag), for traces.
  virtual void host_op(int /*host*/, std::uint32_t /*label*/, std::uint32_t /*tag*/, Time /*start*/,
                       Time /*end*/) {}
  virtual bool wants_host_ops() const { return false; }
  // A host wait on a device event (HostOp::Kind::wait) done: `resumed`, when the host went
  // on (the event's completion, or the host's own clock where it came later). Called only
  // when wants_host_ops(); a wait costs no CPU time, so host_op never sees it.
  virtual void host_wait(int /*host*/, std::uint32_t /*label*/, std::uint32_t /*tag*/,
                         Time /*resumed*/) {}
};

// Device events, shared by all GPUs and hosts of one engine.
class EventTable {
 public:
  explicit EventTable(Engine& e) : engine_(e) {}
  EventId create();
  bool done(EventId id) const { return id == kNoEvent || events_[id].done; }
  Time done_at(EventId id) const { return events_[id].at; }
  // Marks done now and wakes every waiter (handler->on_event(arg) at now).
  void complete(EventId id);
  void wait(EventId id, EventHandler* h, std::uint64_t arg);

 private:
  struct Waiter {
    EventHandler* h;
    std::uint64_t arg;
  };
  // Most events have at most one waiter: it is kept inline, the others in `more`.
  struct Ev {
    bool done = false;
    Time at;
    Waiter first{nullptr, 0};
    std::vector<Waiter> more;
  };
  Engine& engine_;
  std::vector<Ev> events_;
};

// N-party rendezvous: each participant's kernel starts once all N are ready.
class RendezvousTable {
 public:
  RendezvousId create(int participants);
  // Registers an arrival; the last one releases every participant through its handler.
  void arrive(RendezvousId id, EventHandler* h, std::uint64_t arg, Engine& e);
  int arrived(RendezvousId id) const { return static_cast<int>(rv_[id].waiting.size()); }
  int needed(RendezvousId id) const { return rv_[id].needed; }

 private:
  struct Rv {
    int needed = 0;
    std::vector<std::pair<EventHandler*, std::uint64_t>> waiting;
  };
  std::vector<Rv> rv_;
};

class Gpu final : public EventHandler, public Resource {
 public:
  Gpu(Engine& engine, EventTable& events, RendezvousTable& rendezvous, int id, int sm_count,
      std::string name);
  int add_stream(std::string name);
  void set_observer(Observer* o) { observer_ = o; }
  void set_label_names(std::function<std::string(std::uint32_t)> f) { label_name_ = std::move(f); }
  // Enqueues k on a stream; k.launch may lie ahead of the engine's clock.
  void launch(int stream, const Kernel& k);
  // The same, launched at `at` (k.launch ignored).
  void launch(int stream, const Kernel& k, Time at);

  int id() const { return id_; }
  const std::string& name() const { return name_; }

  void on_event(std::uint64_t arg) override;
  void describe_outstanding(std::vector<std::string>& out) const override;

 private:
  struct Stream {
    std::string name;
    // Its launched kernels not yet started, in launch order. A deque: the host may run a whole
    // step ahead of the GPU, and its blocks are allocated once as the queue grows and reused
    // as it drains (a vector doubled, copied and compacted, and every doubling touched fresh
    // pages: most of the largest scenario's system time).
    std::deque<Kernel> queue;
    bool busy = false;
    bool arrived = false;   // head kernel has arrived at its rendezvous
    bool released = false;  // its rendezvous released it
    Time wake_at = Time::max();
  };
  struct Running {
    Kernel k;
    int stream;
    double remaining;  // seconds of work at full rate
    double rate = 0;   // fraction of full rate
    Time start;
    std::uint32_t serial = 0;   // identifies the kernel in completion events
    std::uint32_t version = 0;  // bumped when its rate changes; stale events are ignored
    double held = 0;            // SMs a persistent kernel keeps (Kernel::holds_sms)
    Time began = Time::max();   // when it first ran (got SMs): its start in a time line
  };
  enum Kind : std::uint64_t { kWake = 0, kDone = 1, kRelease = 2 };
  static std::uint64_t encode(Kind k, std::uint64_t a, std::uint64_t b = 0) {
    return (k << 62) | (a << 32) | (b & 0xffffffffu);
  }
  void try_start(int s);
  void start(int s);
  void absorb(Stream& st, Kernel& k);  // coalescing (header)
  void finish(std::size_t index);
  void reallocate();  // after advance()
  void share_ports(std::vector<double>& rates) const;
  void advance();       // every running kernel's progress up to now at its current rate
  int port_users_ = 0;  // running kernels with link-port loads
  std::string label(const Kernel& k) const;

  Engine& engine_;
  EventTable& events_;
  RendezvousTable& rendezvous_;
  int id_;
  int sm_count_;
  std::string name_;
  std::vector<Stream> streams_;
  std::vector<Running> running_;      // small: a handful of concurrent kernels
  std::vector<double> alloc_;         // reallocate's scratch: SMs, then rates, by running kernel
  std::vector<std::size_t> compute_;  // reallocate's scratch: the compute kernels
  mutable std::vector<std::size_t> port_users_scratch_;  // share_ports' scratch
  mutable MaxMinSolver port_solver_;
  mutable std::vector<double> port_rates_;
  Time last_update_;
  std::uint32_t next_serial_ = 0;
  Observer* observer_ = nullptr;
  std::function<std::string(std::uint32_t)> label_name_;
};

}  // namespace moesim::sim_core
