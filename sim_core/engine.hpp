// sim_core/engine.hpp: the discrete-event engine.
//
// Events are ordered by (time, insertion sequence), so ties resolve in the order they
// were scheduled and a run is bit-for-bit reproducible. The engine owns nothing global:
// several engines may run in parallel threads. Resources register themselves so that,
// when the queue empties with work outstanding, the engine can say what is blocked on
// what instead of returning a silently wrong answer.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim_core/time.hpp"

namespace moesim::sim_core {

class Engine;

// Something that receives events. `arg` distinguishes the event kinds of one handler.
class EventHandler {
 public:
  virtual void on_event(std::uint64_t arg) = 0;

 protected:
  ~EventHandler() = default;
};

// Something that can hold outstanding work, for deadlock diagnostics.
class Resource {
 public:
  virtual ~Resource() = default;
  // Appends one line per piece of work still outstanding ("stream r3/compute: kernel
  // 'fc1' waits on event 812 (recorded by r2/pp)"). Empty when idle.
  virtual void describe_outstanding(std::vector<std::string>& out) const = 0;
};

// The queue emptied while resources still had work: a dependency cycle or a missing
// producer. what() lists what waits on what.
class SimulationStuck : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunStats {
  std::uint64_t events = 0;
  Time end;
};

class Engine {
 public:
  Time now() const { return now_; }
  // Schedules handler->on_event(arg) at time t >= now().
  void at(Time t, EventHandler* handler, std::uint64_t arg);
  void after(Time dt, EventHandler* handler, std::uint64_t arg) { at(now_ + dt, handler, arg); }

  void add_resource(const Resource* r) { resources_.push_back(r); }
  // Runs until no event is left; throws SimulationStuck if work is outstanding then.
  RunStats run();
  std::uint64_t events_processed() const { return processed_; }

 private:
  struct Event {
    Time t;
    std::uint64_t seq;
    EventHandler* handler;
    std::uint64_t arg;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  std::vector<Event> heap_;
  std::vector<const Resource*> resources_;
  Time now_;
  std::uint64_t seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace moesim::sim_core
