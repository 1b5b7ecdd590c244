#include "sim_core/gpu.hpp"

#include "sim_core/maxmin.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace moesim::sim_core {

// ---- EventTable ----------------------------------------------------------------------

EventId EventTable::create() {
  events_.emplace_back();
  return static_cast<EventId>(events_.size() - 1);
}

void EventTable::complete(EventId id) {
  Ev& ev = events_[id];
  if (ev.done) throw std::logic_error("EventTable: event completed twice");
  ev.done = true;
  ev.at = engine_.now();
  if (ev.first.h) engine_.at(engine_.now(), ev.first.h, ev.first.arg);
  for (const auto& w : ev.more) engine_.at(engine_.now(), w.h, w.arg);
  ev.first = {nullptr, 0};
  std::vector<Waiter>().swap(ev.more);
}

void EventTable::wait(EventId id, EventHandler* h, std::uint64_t arg) {
  if (done(id)) {
    engine_.at(engine_.now(), h, arg);
    return;
  }
  Ev& ev = events_[id];
  if (!ev.first.h)
    ev.first = {h, arg};
  else
    ev.more.push_back({h, arg});
}

// ---- RendezvousTable -----------------------------------------------------------------

RendezvousId RendezvousTable::create(int participants) {
  if (participants < 1) throw std::invalid_argument("rendezvous needs at least one participant");
  rv_.push_back({participants, {}});
  return static_cast<RendezvousId>(rv_.size() - 1);
}

void RendezvousTable::arrive(RendezvousId id, EventHandler* h, std::uint64_t arg, Engine& e) {
  Rv& rv = rv_[id];
  rv.waiting.emplace_back(h, arg);
  if (static_cast<int>(rv.waiting.size()) < rv.needed) return;
  for (const auto& [wh, warg] : rv.waiting) e.at(e.now(), wh, warg);
  rv.waiting.clear();
}

// ---- Gpu -----------------------------------------------------------------------------

Gpu::Gpu(Engine& engine, EventTable& events, RendezvousTable& rendezvous, int id, int sm_count,
         std::string name)
    : engine_(engine),
      events_(events),
      rendezvous_(rendezvous),
      id_(id),
      sm_count_(sm_count),
      name_(std::move(name)) {
  if (sm_count < 1) throw std::invalid_argument("Gpu: sm_count must be >= 1");
  engine_.add_resource(this);
}

int Gpu::add_stream(std::string name) {
  streams_.push_back({std::move(name), {}, false, false, false, Time::max()});
  return static_cast<int>(streams_.size() - 1);
}

void Gpu::launch(int s, const Kernel& k) {
  launch(s, k, k.launch);
}

void Gpu::launch(int s, const Kernel& k, Time at) {
  Stream& st = streams_.at(static_cast<std::size_t>(s));
  st.queue.emplace_back(k).launch = at;
  if (st.queue.size() == 1 && !st.busy) try_start(s);
}

void Gpu::on_event(std::uint64_t arg) {
  const auto kind = static_cast<Kind>(arg >> 62);
  const auto a = static_cast<std::uint32_t>((arg >> 32) & 0x3fffffffu);
  const auto b = static_cast<std::uint32_t>(arg & 0xffffffffu);
  switch (kind) {
    case kWake: {
      Stream& st = streams_[a];
      if (st.wake_at <= engine_.now()) st.wake_at = Time::max();
      try_start(static_cast<int>(a));
      break;
    }
    case kRelease:
      streams_[a].released = true;
      try_start(static_cast<int>(a));
      break;
    case kDone:
      for (std::size_t i = 0; i < running_.size(); ++i)
        if (running_[i].serial == a) {
          if (running_[i].version == b) finish(i);
          break;
        }
      break;
  }
}

void Gpu::try_start(int s) {
  Stream& st = streams_[static_cast<std::size_t>(s)];
  if (st.busy || st.queue.empty()) return;
  const Kernel& k = st.queue.front();
  const Time now = engine_.now();
  if (k.launch > now) {
    if (st.wake_at > k.launch) {
      st.wake_at = k.launch;
      engine_.at(k.launch, this, encode(kWake, static_cast<std::uint64_t>(s)));
    }
    return;
  }
  for (EventId w : k.waits) {
    if (!events_.done(w)) {
      events_.wait(w, this, encode(kWake, static_cast<std::uint64_t>(s)));
      return;
    }
  }
  if (k.rendezvous != kNoRendezvous && !st.released) {
    if (!st.arrived) {
      st.arrived = true;
      rendezvous_.arrive(k.rendezvous, this, encode(kRelease, static_cast<std::uint64_t>(s)),
                         engine_);
    }
    return;
  }
  start(s);
}

void Gpu::start(int s) {
  Stream& st = streams_[static_cast<std::size_t>(s)];
  Running r{st.queue.front(), s, 0, 0, engine_.now(), next_serial_++, 0};
  st.queue.pop_front();
  absorb(st, r.k);
  st.busy = true;
  st.arrived = st.released = false;
  r.remaining = r.k.work_s;
  if (r.k.sms == 0 || r.k.sms > sm_count_) r.k.sms = sm_count_;
  if (r.k.uses_ports()) ++port_users_;
  advance();  // brings the others' progress up to now first
  running_.push_back(r);
  reallocate();
}

void Gpu::absorb(Stream& st, Kernel& k) {
  if (k.merge_class == 0 || k.reserved || k.holds_sms || k.uses_ports() ||
      k.rendezvous != kNoRendezvous)
    return;  // a persistent kernel would hold its SMs for the whole absorbed run
  const Time now = engine_.now();
  while (k.record == kNoEvent && !st.queue.empty()) {
    const Kernel& b = st.queue.front();
    if (b.merge_class != k.merge_class || b.launch > now || b.sms != k.sms || b.reserved ||
        b.holds_sms || b.uses_ports() || b.rendezvous != kNoRendezvous ||
        k.parts + b.parts > std::numeric_limits<std::uint16_t>::max())
      return;
    for (EventId w : b.waits)
      if (!events_.done(w)) return;
    k.work_s += b.work_s;
    k.parts = static_cast<std::uint16_t>(k.parts + b.parts);
    k.record = b.record;
    st.queue.pop_front();
  }
}

void Gpu::finish(std::size_t index) {
  advance();  // settle progress up to now
  Running r = running_[index];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  if (r.k.uses_ports()) --port_users_;
  Stream& st = streams_[static_cast<std::size_t>(r.stream)];
  st.busy = false;
  if (observer_)
    observer_->kernel_done(id_, r.stream, r.k, r.began == Time::max() ? r.start : r.began,
                           engine_.now());
  if (r.k.record != kNoEvent) events_.complete(r.k.record);
  reallocate();
  try_start(r.stream);
}

// Advances every running kernel to now at its old rate, then hands out SMs anew and
// reschedules the completions whose rate changed.
void Gpu::advance() {
  const Time now = engine_.now();
  const double dt = (now - last_update_).seconds();
  last_update_ = now;
  for (auto& r : running_) r.remaining = std::max(0.0, r.remaining - r.rate * dt);
}

void Gpu::reallocate() {
  const Time now = engine_.now();
  if (running_.empty()) return;
  if (running_.size() == 1) {  // alone: all the SMs it wants, capped only by its own port loads
    Running& r = running_.front();
    double rate = 1.0;
    if (port_users_ > 0)
      for (float l : r.k.port_load)
        if (l > 1) rate = std::min(rate, 1.0 / l);
    if (r.k.holds_sms) r.held = r.k.sms;
    if (r.began == Time::max()) r.began = now;
    if (rate == r.rate && r.version != 0) return;
    r.rate = rate;
    ++r.version;
    engine_.at(now + Time::from_seconds(r.remaining / rate), this,
               encode(kDone, r.serial, r.version));
    return;
  }
  // Persistent kernels keep what they hold; reserved kernels take theirs next, in start
  // order; then water-filling over compute kernels (a persistent one from what it holds).
  double free = sm_count_;
  std::vector<double>& alloc = alloc_;
  alloc.assign(running_.size(), 0.0);
  for (std::size_t i = 0; i < running_.size(); ++i)
    if (running_[i].k.holds_sms && !running_[i].k.reserved) {
      alloc[i] = std::min<double>(running_[i].held, free);
      free -= alloc[i];
    }
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].k.sms < 0 || !running_[i].k.reserved) continue;
    alloc[i] = std::min<double>(running_[i].k.sms, free);
    free -= alloc[i];
  }
  std::vector<std::size_t>& compute = compute_;
  compute.clear();
  for (std::size_t i = 0; i < running_.size(); ++i)
    if (running_[i].k.sms > 0 && !running_[i].k.reserved) compute.push_back(i);
  std::sort(compute.begin(), compute.end(), [&](std::size_t a, std::size_t b) {
    return running_[a].k.sms - alloc[a] < running_[b].k.sms - alloc[b];
  });
  for (std::size_t j = 0; j < compute.size(); ++j) {
    const double share = free / static_cast<double>(compute.size() - j);
    const std::size_t i = compute[j];
    const double more = std::min<double>(running_[i].k.sms - alloc[i], share);
    alloc[i] += more;
    free -= more;
    if (running_[i].k.holds_sms) running_[i].held = alloc[i];
  }

  for (std::size_t i = 0; i < running_.size(); ++i)
    alloc[i] = running_[i].k.sms < 0 ? 1.0 : alloc[i] / running_[i].k.sms;  // now the rate
  if (port_users_ > 0) share_ports(alloc);

  for (std::size_t i = 0; i < running_.size(); ++i) {
    Running& r = running_[i];
    const double rate = alloc[i];
    if (rate == r.rate && r.version != 0) continue;
    r.rate = rate;
    ++r.version;
    if (rate <= 0) continue;  // starved: resumes when another kernel ends
    if (r.began == Time::max()) r.began = now;
    const Time done = now + Time::from_seconds(r.remaining / rate);
    engine_.at(done, this, encode(kDone, r.serial, r.version));
  }
}

// Caps the SM rates by the ports the transfers share (max-min fair over their rates).
void Gpu::share_ports(std::vector<double>& rates) const {
  if (port_users_ == 1) {  // alone: only its own load caps it
    for (std::size_t i = 0; i < running_.size(); ++i)
      if (running_[i].k.uses_ports())
        for (float l : running_[i].k.port_load)
          if (l > 1) rates[i] = std::min(rates[i], 1.0 / l);
    return;
  }
  std::vector<std::size_t>& users = port_users_scratch_;
  users.clear();
  for (std::size_t i = 0; i < running_.size(); ++i)
    if (rates[i] > 0 && running_[i].k.uses_ports()) users.push_back(i);
  if (users.empty()) return;
  MaxMinSolver& solver = port_solver_;
  solver.clear();
  std::array<std::size_t, Kernel::kPorts> port{};
  for (int p = 0; p < Kernel::kPorts; ++p)
    port[static_cast<std::size_t>(p)] = solver.add_constraint(1.0);
  for (std::size_t i : users) {
    const std::size_t v = solver.add_variable(1.0, rates[i]);
    for (int p = 0; p < Kernel::kPorts; ++p)
      if (const float l = running_[i].k.port_load[static_cast<std::size_t>(p)]; l > 0)
        solver.use(port[static_cast<std::size_t>(p)], v, l);
  }
  std::vector<double>& x = port_rates_;
  solver.solve(x);
  for (std::size_t j = 0; j < users.size(); ++j) rates[users[j]] = x[j];
}

std::string Gpu::label(const Kernel& k) const {
  return label_name_ ? label_name_(k.label) : "kernel#" + std::to_string(k.label);
}

void Gpu::describe_outstanding(std::vector<std::string>& out) const {
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    const Stream& st = streams_[s];
    if (st.queue.empty()) continue;
    const Kernel& k = st.queue.front();
    std::string why;
    for (EventId w : k.waits)
      if (!events_.done(w))
        why = "waits on device event " + std::to_string(w) + " that nothing has completed";
    if (why.empty() && k.rendezvous != kNoRendezvous)
      why = "waits at rendezvous " + std::to_string(k.rendezvous) + " (" +
            std::to_string(rendezvous_.arrived(k.rendezvous)) + " of " +
            std::to_string(rendezvous_.needed(k.rendezvous)) + " participants arrived)";
    if (why.empty()) why = "is ready but was never started";
    out.push_back(name_ + "/" + st.name + ": kernel '" + label(k) + "' " + why + " (" +
                  std::to_string(st.queue.size()) + " queued)");
  }
}

}  // namespace moesim::sim_core
