// sim_core/host.hpp: a host CPU thread executing an ordered program.
//
// The thread pays each op's CPU time in order. A launch enqueues a kernel whose launch
// time is the host clock at that point; a wait blocks until a device event completes
// (a device-to-host synchronization). Because the GPU never affects the host except
// through waits, the thread runs ahead of the engine's clock in batches, stamping launch
// times, and needs engine events only to resume after a batch or a wait. If the host is
// slower than the GPU, kernels arrive late and the GPU idles: host boundedness.
#pragma once

#include <cstdint>
#include <string>

#include "sim_core/gpu.hpp"

namespace moesim::sim_core {

struct HostOp {
  enum class Kind : std::uint8_t { work, launch, wait };
  Kind kind = Kind::work;
  Time cpu;                 // CPU time of the op, paid before its action
  std::uint32_t label = 0;  // for traces
  Gpu* gpu = nullptr;       // launch: where
  int stream = 0;
  Kernel kernel;
  EventId event = kNoEvent;  // wait: on what
};

// Produces a thread's ops lazily, in program order.
class HostProgram {
 public:
  virtual ~HostProgram() = default;
  // The next op, valid until the following call; null when the program has ended.
  virtual const HostOp* next() = 0;
};

class HostThread final : public EventHandler, public Resource {
 public:
  HostThread(Engine& engine, EventTable& events, int id, std::string name, HostProgram& program);
  void set_observer(Observer* o) { observer_ = o; }
  void start(Time at);

  bool finished() const { return finished_; }
  Time clock() const { return clock_; }
  Time busy() const { return busy_; }  // CPU time spent on ops
  const std::string& name() const { return name_; }

  void on_event(std::uint64_t arg) override;
  void describe_outstanding(std::vector<std::string>& out) const override;

 private:
  static constexpr int kBatch = 128;
  void run();

  Engine& engine_;
  EventTable& events_;
  int id_;
  std::string name_;
  HostProgram& program_;
  Observer* observer_ = nullptr;
  Time clock_;
  Time busy_;
  bool started_ = false;
  bool finished_ = false;
  EventId blocked_on_ = kNoEvent;
  std::uint32_t blocked_label_ = 0, blocked_tag_ = 0;  // the blocked wait's, for host_wait
};

}  // namespace moesim::sim_core
