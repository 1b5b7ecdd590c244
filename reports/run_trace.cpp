// reports/run_trace.cpp: `run --trace`: the step's spans (schedules::StepResult::trace) as a
// Chrome/Perfetto trace, at a level of detail (reports/run.hpp says what each level merges).
#include <array>
#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reports/run.hpp"

namespace moesim::reports {

const sim_core::NameTable<TraceLevel>& trace_level_names() {
  static constexpr std::array<sim_core::NameEntry<TraceLevel>, 3> kEntries{{
      {TraceLevel::kernel, "kernel",
       "every kernel and host op (the default scenario: about 90 MB)"},
      {TraceLevel::module, "module",
       "a layer pass's consecutive kernels of one module as one slice"},
      {TraceLevel::layer, "layer", "a layer pass's kernels as one slice per stream"},
  }};
  static constexpr sim_core::NameTable<TraceLevel> kTable{kEntries};
  return kTable;
}

namespace {

using schedules::TraceContext;
// The breakdown's module slots: the model's modules, then "outside_layers".
constexpr std::uint64_t kModuleSlots = workload::kModuleCount + 1;
using schedules::TraceSpan;

// A slice being written: consecutive spans of one lane (rank, thread) that the level merges.
struct Slice {
  std::uint64_t key = 0;  // what merges: spans with the same key, back to back
  const TraceSpan* first = nullptr;
  const TraceSpan* module_from = nullptr;  // its first layer kernel or launch (names the module)
  double end_s = 0, busy_s = 0;
  int spans = 0;
  bool ep = false;  // holds an EP transfer
};

// A layer pass's EP transfer slices on one rank, for its flow: where the first and the last start.
struct EpEnds {
  int pid = 0, tid = 0;
  double first_ts = 0, last_ts = 0;
  int count = 0;
};

class TraceWriter {
 public:
  TraceWriter(const predict::Prediction& p, std::ostream& out, TraceLevel level)
      : step_(p.step),
        out_(out),
        level_(level),
        lanes_(static_cast<std::size_t>(step_.rank_end_s.size() * (step_.streams.size() + 1))) {
    for (const auto& l : step_.labels) names_.push_back(nlohmann::json(l).dump());
  }

  void write() {
    buf_ = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    const int ranks = static_cast<int>(step_.rank_end_s.size());
    for (int r = 0; r < ranks; ++r) {
      add(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {}"}}}})",
                      r, r));
      add(fmt::format(
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":0,"args":{{"name":"host"}}}})", r));
      for (std::size_t s = 0; s < step_.streams.size(); ++s)
        add(fmt::format(
            R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", r, s + 1,
            nlohmann::json("stream " + step_.streams[s]).dump()));
    }
    for (const TraceSpan& s : step_.trace) span(s);
    for (Lane& l : lanes_) {
      flush_child(l);
      flush_parent(l);
    }
    flows();
    out_ << buf_ << "\n]}\n";
  }

 private:
  // A lane's open slices: the layer pass (parent) and, inside it, the merged kernels or
  // host ops (child) that the level writes.
  struct Lane {
    Slice parent, child;
    std::array<double, kModuleSlots> host_by_module{};  // the host lane's open pass
  };

  void add(const std::string& e) {
    if (!first_event_) buf_ += ",\n";
    first_event_ = false;
    buf_ += e;
    if (buf_.size() > (1u << 20)) {
      out_ << buf_;
      buf_.clear();
    }
  }

  const schedules::LabelKind& kind(const TraceSpan& s) const { return step_.label_kinds[s.label]; }
  bool is_ep(const TraceSpan& s) const {
    return s.comm == 1 + static_cast<int>(schedules::CommKind::ep);
  }
  // A span of a layer pass (a layer kernel, its launch, a graph launch or sync among
  // them): it nests in the pass's slice. Transfers, the optimizer and DP stand alone.
  static bool in_pass(const TraceSpan& s) { return s.context != 0 && s.link == 0; }

  // What merges into one child at the module level: a layer pass's kernels of one module
  // (a host op that launches no layer kernel joins the open child); else nothing merges.
  std::uint64_t child_key(const TraceSpan& s, const Slice& open) {
    if (level_ != TraceLevel::module || !in_pass(s)) return ++unique_ << 1 | 1;
    if (!kind(s).layer && open.first) return open.key;
    return (static_cast<std::uint64_t>(s.context) * (kModuleSlots + 1) + kind(s).module) << 1;
  }

  // A slice opened by its first span, under `key`.
  Slice open_slice(std::uint64_t key, const TraceSpan& s) const {
    return Slice{key, &s, kind(s).layer ? &s : nullptr, s.end_s, s.end_s - s.start_s, 1, is_ep(s)};
  }

  static void extend(Slice& l, const TraceSpan& s, bool layer, bool ep) {
    l.end_s = std::max(l.end_s, s.end_s);
    l.busy_s += s.end_s - s.start_s;
    ++l.spans;
    l.ep = l.ep || ep;
    if (!l.module_from && layer) l.module_from = &s;
  }

  void span(const TraceSpan& s) {
    Lane& l = lanes_[lane(s)];
    const bool pass = in_pass(s);
    if (l.parent.first && (!pass || !same_parent(*l.parent.first, s))) {
      flush_child(l);
      flush_parent(l);
    }
    if (pass) {
      if (l.parent.first)
        extend(l.parent, s, kind(s).layer, is_ep(s));
      else
        l.parent = open_slice(s.context, s);
      // The host's time in the pass by module (its parent's args at the module level).
      if (s.track < 0)
        l.host_by_module[kind(s).layer ? kind(s).module : kModuleSlots - 1] += s.end_s - s.start_s;
      if (level_ == TraceLevel::layer || (level_ == TraceLevel::module && s.track < 0)) return;
    }
    const std::uint64_t k = child_key(s, l.child);
    if (l.child.first && k == l.child.key) return extend(l.child, s, kind(s).layer, is_ep(s));
    flush_child(l);
    l.child = open_slice(k, s);
  }

  // A GPU stream's parent is a layer pass; the host's a work item (a chunk's pass of one
  // microbatch, its layers' launches and the transfers it posts): the host runs ahead of
  // the GPU, and its time is read per item, by module (host_us).
  bool same_parent(const TraceSpan& open, const TraceSpan& s) const {
    if (s.context == open.context) return true;
    if (s.track >= 0) return false;
    const TraceContext &a = step_.contexts[open.context], &b = step_.contexts[s.context];
    return a.microbatch == b.microbatch && a.chunk == b.chunk && a.pass == b.pass;
  }

  std::size_t lane(const TraceSpan& s) const {
    return static_cast<std::size_t>(s.rank) * (step_.streams.size() + 1) +
           static_cast<std::size_t>(s.track + 1);
  }

  // The context's args: microbatch, chunk, pass and (in a layer pass) the layer.
  std::string context_args(std::uint32_t context) const {
    const TraceContext& c = step_.contexts[context];
    std::string a = fmt::format(R"("microbatch":{},"chunk":{},"pass":"{}")", c.microbatch, c.chunk,
                                schedules::pass_names().name(c.pass));
    if (c.has_item) a += fmt::format(R"(,"layer":"{}")", schedules::layout_item_name(c.item));
    return a;
  }
  std::string module_name(const Slice& l) const {
    return std::string(schedules::breakdown_module_name(kind(*l.module_from).module));
  }
  // The busy time of a merged slice when it has idle inside (what dur less busy_us shows).
  static std::string busy_args(const Slice& l) {
    if (l.spans < 2 || l.busy_s >= 0.999 * (l.end_s - l.first->start_s)) return {};
    return fmt::format(R"("kernels":{},"busy_us":{:.3f})", l.spans, l.busy_s * 1e6);
  }
  // Microseconds, to the nanosecond at the kernel level and to 0.1 us above it; the end is
  // rounded, not the duration, so that a slice inside another stays inside it.
  double rounded(double us) const {
    const double scale = level_ == TraceLevel::kernel ? 1e3 : 10;
    return std::round(us * scale) / scale;
  }
  double us(double s) const { return rounded(s * 1e6); }
  void slice(const TraceSpan& s, double end_s, const std::string& name, const std::string& args) {
    const double ts = us(s.start_s);
    const double dur = std::max(0.0, rounded(us(end_s) - ts));
    add(fmt::format(R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":{},"dur":{}{}}})", name, s.rank,
                    s.track + 1, ts, dur,
                    args.empty() ? std::string() : ",\"args\":{" + args + "}"));
  }

  // The layer pass: "t12 forward", with its context and, with idle inside, its busy time.
  void flush_parent(Lane& lane) {
    Slice& l = lane.parent;
    if (!l.first) return;
    const TraceContext& c = step_.contexts[l.first->context];
    // The name says the layer and the pass; the args the rest of the context.
    std::string args = fmt::format(R"("microbatch":{},"chunk":{})", c.microbatch, c.chunk);
    if (const std::string b = busy_args(l); !b.empty()) args += "," + b;
    if (l.first->track < 0) {
      // The host lane: its time by module ("outside_layers": graph launches and syncs).
      std::string host;
      for (std::size_t m = 0; m < kModuleSlots; ++m)
        if (lane.host_by_module[m] > 0)
          host += fmt::format("{}\"{}\":{:.1f}", host.empty() ? "" : ",",
                              schedules::breakdown_module_name(m), lane.host_by_module[m] * 1e6);
      lane.host_by_module.fill(0);
      if (level_ != TraceLevel::kernel) args += ",\"host_us\":{" + host + "}";
    }
    const std::string_view pass = schedules::pass_names().name(c.pass);
    slice(*l.first, l.end_s,
          l.first->track < 0
              ? fmt::format("\"{} {}.{}\"", pass, c.microbatch, c.chunk)
              : fmt::format("\"{} {}\"", c.has_item ? schedules::layout_item_name(c.item) : "pp",
                            pass),
          args);
    if (level_ == TraceLevel::layer && l.ep) ep_end(*l.first);
    l.first = nullptr;
  }

  // A kernel or host op (kernel level: with its context and module), or a module's run
  // in a layer pass (module level: named after the module; the context is its parent's).
  void flush_child(Lane& lane) {
    Slice& l = lane.child;
    if (!l.first) return;
    const TraceSpan& s = *l.first;
    std::string name = names_[s.label], args;
    if (level_ == TraceLevel::module && in_pass(s)) {
      if (l.module_from) name = "\"" + module_name(l) + "\"";
      args = busy_args(l);
    } else if (s.context != 0) {
      args = context_args(s.context);
      if (l.module_from) args += fmt::format(R"(,"module":"{}")", module_name(l));
    }
    slice(s, l.end_s, name, args);
    if (s.link) {
      auto& [send, recv] = links_[s.link];
      (names_[s.label].find("send") != std::string::npos ? send : recv) = &s;
    }
    if (l.ep) ep_end(s);
    l.first = nullptr;
  }

  // A layer pass's EP transfer slice on a GPU stream: its flow runs from the first to the last.
  void ep_end(const TraceSpan& s) {
    if (s.track < 0 || s.context == 0) return;
    EpEnds& e = ep_[{s.rank, s.context}];
    if (e.count++ == 0) e.pid = s.rank, e.tid = s.track + 1, e.first_ts = s.start_s * 1e6;
    e.last_ts = s.start_s * 1e6;
  }

  // Flow events (ph s / f, bound to the enclosing slices): each pipeline transfer from its
  // send to its receive; each layer pass's first EP transfer slice to its last.
  void flows() {
    std::uint64_t id = 0;
    const auto flow = [&](const char* name, int pid_a, int tid_a, double ts_a, int pid_b, int tid_b,
                          double ts_b) {
      ++id;
      add(fmt::format(R"({{"ph":"s","id":{},"name":"{}","pid":{},"tid":{},"ts":{:.3f}}})", id, name,
                      pid_a, tid_a, ts_a));
      add(fmt::format(R"({{"ph":"f","bp":"e","id":{},"name":"{}","pid":{},"tid":{},"ts":{:.3f}}})",
                      id, name, pid_b, tid_b, ts_b));
    };
    for (const auto& [link, ends] : links_)
      if (ends.first && ends.second)
        flow("pp", ends.first->rank, ends.first->track + 1, ends.first->start_s * 1e6,
             ends.second->rank, ends.second->track + 1, ends.second->start_s * 1e6);
    for (const auto& [at, e] : ep_)
      if (e.count > 1 && e.last_ts > e.first_ts)
        flow("ep", e.pid, e.tid, e.first_ts, e.pid, e.tid, e.last_ts);
  }

  const schedules::StepResult& step_;
  std::ostream& out_;
  TraceLevel level_;
  std::vector<Lane> lanes_;
  std::vector<std::string> names_;
  std::string buf_;
  bool first_event_ = true;
  std::uint64_t unique_ = 0;
  std::map<std::uint32_t, std::pair<const TraceSpan*, const TraceSpan*>> links_;  // send, receive
  std::map<std::pair<int, std::uint32_t>, EpEnds> ep_;  // by rank and context
};

}  // namespace

// Streamed rather than built as one JSON document: a full step has ~10^6 events.
void write_trace(const predict::Prediction& p, std::ostream& out, TraceLevel level) {
  TraceWriter(p, out, level).write();
}

}  // namespace moesim::reports
