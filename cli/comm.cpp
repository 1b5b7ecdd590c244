// cli/comm.cpp: `moesim comm`: the communication model alone (predict/comm.hpp; printed by
// reports/comm.hpp).
#include "cli/commands.hpp"

#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "config/load.hpp"
#include "hw_models/collectives.hpp"
#include "predict/comm.hpp"
#include "reports/comm.hpp"

namespace moesim::cli {
namespace {

// The communication model alone (predict/comm.hpp).
class Comm final : public Command {
 public:
  void configure(CLI::App& app) override {
    app_ = &app;
    app.add_option("--system", q_.system, "system preset (h800, gb200-nvl72, ...)")->required();
    app.add_option(
           "--op", q_.op,
           "all-reduce, all-gather, reduce-scatter, all-to-all, send-recv, ep-dispatch, ep-combine")
        ->required();
    app.add_option("--ranks", q_.ranks, "GPUs in the collective (consecutive ranks)")
        ->capture_default_str();
    app.add_option("--bytes", q_.bytes, "collective size in bytes, as nccl-tests counts it")
        ->capture_default_str();
    app.add_option("--gpus-per-domain", q_.gpus_per_domain,
                   "GPUs per NVLink domain (default: the system's)");
    app.add_option("--dispatcher", q_.dispatcher,
                   "EP dispatcher: alltoall, allgather, deepep, hybridep")
        ->capture_default_str();
    app.add_option("--ep", q_.ep, "expert-parallel ranks")->capture_default_str();
    app.add_option("--tokens", q_.tokens, "tokens per rank")->capture_default_str();
    app.add_option("--hidden", q_.hidden, "hidden size")->capture_default_str();
    app.add_option("--topk", q_.topk, "experts per token")->capture_default_str();
    app.add_option("--experts", q_.experts, "routed experts")->capture_default_str();
    app.add_option("--groups", q_.groups,
                   "group-limited routing over this many contiguous expert groups (Megatron's "
                   "moe_router_num_groups; 0: none), as the step simulation prices a model's "
                   "router; DeepEP / HybridEP only (NCCL's all-to-all sends a copy per expert)");
    app.add_option(
        "--topk-groups", q_.topk_groups,
        "groups a token may use: with --groups, expert groups (moe_router_group_topk); without, "
        "NVLink domains (node-limited routing; default: DeepEP 4, as its tests, HybridEP all)");
    app.add_option("--dtype", q_.dtype, "dispatch payload: bf16 or fp8")->capture_default_str();
    app.add_option(
        "--sms", q_.sms,
        "SMs given to DeepEP's or HybridEP's normal kernels (default: the library's usual); the "
        "flow model caps each GPU's throughput by them where the preset has the kernels' SM "
        "throughput");
    app.add_option("--algorithm", q_.algorithm,
                   "collectives: auto (NCCL's choice, the faster), ring, or nvls (all-reduce in "
                   "one NVLink domain)")
        ->capture_default_str();
    app.add_option(
           "--protocol", q_.protocol,
           "rings: auto (the faster of LL128 and Simple), ll, ll128 or simple (NCCL's protocols)")
        ->capture_default_str();
    app.add_flag("--low-latency", q_.low_latency,
                 "DeepEP's low-latency kernels (ep-dispatch, ep-combine)");
    app.add_flag("--json", json_, "print one JSON object");
  }
  int run(Io& io) override {
    // An unknown op is predict::comm's to name (--op), not an option's.
    const bool ep = predict::is_ep_op(q_.op);
    if (!ep && !hw_models::collective_names().find(q_.op)) return print(io, predict::comm(q_));
    // An option of the other kind of operation would change nothing: refused, named.
    for (const char* o : {"--dispatcher", "--ep", "--tokens", "--hidden", "--topk", "--experts",
                          "--groups", "--topk-groups", "--dtype", "--sms", "--low-latency"})
      if (!ep && app_->count(o) > 0)
        throw config::InputError(
            "<command line>", o,
            fmt::format("applies to ep-dispatch and ep-combine, not {}", q_.op));
    for (const char* o : {"--ranks", "--bytes", "--algorithm", "--protocol"})
      if (ep && app_->count(o) > 0)
        throw config::InputError(
            "<command line>", o,
            fmt::format("applies to the collectives; {} sizes itself from --ep, --tokens, "
                        "--hidden, --topk and --dtype",
                        q_.op));
    return print(io, predict::comm(q_));
  }
  int print(Io& io, const predict::CommAnswer& a) const {
    io.out << (json_ ? reports::comm_json(a).dump(2) + "\n" : reports::comm_text(a));
    return 0;
  }

 private:
  predict::CommQuery q_;
  bool json_ = false;
  const CLI::App* app_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_comm_command() {
  return std::make_unique<Comm>();
}

}  // namespace moesim::cli
