#include "sim_core/host.hpp"

#include <algorithm>

namespace moesim::sim_core {

HostThread::HostThread(Engine& engine, EventTable& events, int id, std::string name,
                       HostProgram& program)
    : engine_(engine), events_(events), id_(id), name_(std::move(name)), program_(program) {
  engine_.add_resource(this);
}

void HostThread::start(Time at) {
  started_ = true;
  clock_ = at;
  engine_.at(at, this, 0);
}

void HostThread::on_event(std::uint64_t) {
  const bool resumed = blocked_on_ != kNoEvent;
  if (resumed) {
    clock_ = std::max(clock_, events_.done_at(blocked_on_));
    blocked_on_ = kNoEvent;
  }
  clock_ = std::max(clock_, engine_.now());
  if (resumed && observer_ && observer_->wants_host_ops())
    observer_->host_wait(id_, blocked_label_, blocked_tag_, clock_);
  run();
}

void HostThread::run() {
  const bool trace = observer_ && observer_->wants_host_ops();
  for (int i = 0; i < kBatch; ++i) {
    const HostOp* next = program_.next();
    if (!next) {
      finished_ = true;
      return;
    }
    const HostOp& op = *next;
    const Time begin = clock_;
    clock_ += op.cpu;
    busy_ += op.cpu;
    if (trace && op.cpu > Time::zero())
      observer_->host_op(id_, op.label, op.kernel.tag, begin, clock_);
    switch (op.kind) {
      case HostOp::Kind::work:
        break;
      case HostOp::Kind::launch:
        op.gpu->launch(op.stream, op.kernel, clock_);
        break;
      case HostOp::Kind::wait:
        if (events_.done(op.event)) {
          if (op.event != kNoEvent) clock_ = std::max(clock_, events_.done_at(op.event));
          if (trace) observer_->host_wait(id_, op.label, op.kernel.tag, clock_);
        } else {
          blocked_on_ = op.event;
          blocked_label_ = op.label;
          blocked_tag_ = op.kernel.tag;
          events_.wait(op.event, this, 0);
          return;
        }
        break;
    }
  }
  engine_.at(std::max(clock_, engine_.now()), this, 0);  // next batch
}

void HostThread::describe_outstanding(std::vector<std::string>& out) const {
  if (blocked_on_ != kNoEvent)
    out.push_back(name_ + ": host waits on device event " + std::to_string(blocked_on_) +
                  " that no kernel has completed");
  else if (started_ && !finished_)
    out.push_back(name_ + ": host program did not finish");
}

}  // namespace moesim::sim_core
