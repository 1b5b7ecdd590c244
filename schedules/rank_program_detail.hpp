// schedules/rank_program_detail.hpp: the class of one pipeline rank's host program
// (schedules/rank_program.hpp), internal to the files that define it:
//   rank_program.cpp        the program's walk over its work items: receives, the
//                           stage's kernels and their host cost, sends
//   rank_program_dp.cpp     the traffic outside the layers' kernels: data-parallel
//                           gathers and reductions, FP8 amax reductions, the optimizer step
//   rank_program_pairs.cpp  overlapped pairs: a forward and a backward chunk as schedule
//                           nodes on two streams
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <vector>

#include "schedules/rank_program.hpp"

namespace moesim::schedules::detail {

using sim_core::EventId;
using sim_core::HostOp;
using sim_core::Kernel;
using sim_core::kNoEvent;

// One pipeline rank's host program, expanded one work item at a time.
class RankProgram final : public sim_core::HostProgram {
 public:
  RankProgram(StepState& sim, sim_core::Gpu& gpu, std::int64_t global);

  const HostOp* next() override;

 private:
  // The item's place: its pipeline stage's id (pairs transfers) and whether it is the
  // first or last stage of its pipeline.
  struct Place {
    int id, layout_stage;
    bool descending, first, last;
  };

  // One chunk's kernels in flight on one compute stream: the gates of its first kernel,
  // the CUDA graph run it is in, and its last kernel (what sends and reductions wait for).
  struct Lane {
    int item = -1;  // the work item
    int stream = kComputeStream;
    EventId gate = kNoEvent;
    EventId cross = kNoEvent;         // the next kernel waits for the other lane (DualPipe pairs)
    EventId layer_gate = kNoEvent;    // the next kernel waits for its layer's parameters
    EventId offload_gate = kNoEvent;  // ...and for its layer's offload copy (offload_layers)
    bool first = true, in_graph = false;
    std::size_t last = 0;
    std::size_t before_last = kNone;  // the main kernel before `last` (emit_side's fork)
    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::vector<EventId> unit_gather;  // FSDP: each stage item's parameter all-gather
    // A sync the host takes after `pending_launches` more launches of this item's dispatch
    // kernels (Megatron's alltoall dispatcher: after the permute, before its all-to-all),
    // whatever the host launches in between (an eager shared expert, the other chunk's
    // nodes under EP overlap); at the item's end at the latest.
    EventId pending_sync = kNoEvent;
    int pending_launches = 0;
  };

  // One kernel of an item, or none (a layer without kernels in this pass), and the stage
  // items it begins and ends: where layer-wise data-parallel traffic hooks in.
  struct Step {
    const Priced* p = nullptr;
    int begins = -1, ends = -1;
    int item = -1;  // the stage item (layer) the kernel is of
  };

  // An overlapped pair (Megatron-Core's 1F1B all-to-all overlap, DualPipe's F&B) runs each
  // layer as schedule nodes: pre-dispatch (attention, pre-MLP norm, shared expert, router,
  // dispatch preprocess) and experts (the dense MLP, or post-dispatch, experts and combine
  // preprocess) on the computation stream, dispatch and combine on the communication
  // stream, MTP's post-process on the computation stream (Megatron-Core
  // models/gpt/fine_grained_callables.py, models/common/model_chunk_schedule_plan.py @
  // d98e8a64). A node waits for the event its microbatch's previous node recorded (one
  // event per microbatch: ScheduleNode.stream_acquire_context, pipeline_parallel/utils.py),
  // and each stream runs in launch order; a weight-gradient node (Megatron's backward_dw
  // under --delay-wgrad-compute, DualPipe's W) is off the chain: the next node does not
  // wait for it. The chunks' embedding and output layer run before and after the pairs; of
  // unequal chunks the backward's remaining layers run alone, then the forward's
  // (ModelChunkSchedulePlan.run). Nodes are told apart by the kernels' modules, so the
  // dispatcher's own permute and unpermute kernels (moe_dispatch, moe_combine) run in the
  // dispatch and combine nodes on the communication stream, where Megatron runs the
  // all-to-all dispatcher's in the neighbouring computation nodes (HybridEP's permute is
  // inside its dispatch, as here); MTP's embedding norms and projection (head) run in its
  // post-process node.
  enum NodeSlot : std::uint8_t { kPreDispatch, kDispatch, kExperts, kCombine, kPost, kSlots };
  // One launch of a layer pair: the forward's or the backward's node, or the backward's
  // weight-gradient part of a node.
  struct NodeLaunch {
    bool forward;
    NodeSlot slot;
    bool weights;
  };
  // Megatron-Core's order (TransformerLayerSchedulePlan.run, model_chunk_schedule_plan.py
  // 236-303): the experts' backward is queued before the host blocks in the forward's
  // dispatch (the dropless token-count sync), the delayed weight gradients run beside the
  // next communication.
  static constexpr std::array<NodeLaunch, 13> kMegatronPair{{{false, kPost, false},
                                                             {false, kPost, true},
                                                             {false, kCombine, false},
                                                             {true, kPreDispatch, false},
                                                             {false, kExperts, false},
                                                             {true, kDispatch, false},
                                                             {false, kExperts, true},
                                                             {false, kDispatch, false},
                                                             {true, kExperts, false},
                                                             {true, kCombine, false},
                                                             {false, kPreDispatch, false},
                                                             {true, kPost, false},
                                                             {false, kPreDispatch, true}}};
  // DualPipe's, as DeepSeek's own trace shows it (deepseek-ai/profile-data train.json: the
  // host's node ranges of each layer pair, docs/deepseek-trace.md): combine(B), attn(F),
  // mlp(B), dispatch(F), dispatch(B), mlp(W), mlp(F), attn(B), attn(W), combine(F).
  static constexpr std::array<NodeLaunch, 13> kDualPipePair{{{false, kPost, false},
                                                             {false, kPost, true},
                                                             {false, kCombine, false},
                                                             {true, kPreDispatch, false},
                                                             {false, kExperts, false},
                                                             {true, kDispatch, false},
                                                             {false, kDispatch, false},
                                                             {false, kExperts, true},
                                                             {true, kExperts, false},
                                                             {false, kPreDispatch, false},
                                                             {false, kPreDispatch, true},
                                                             {true, kCombine, false},
                                                             {true, kPost, false}}};

  struct Unit {
    int item = -1;  // the stage item (layer)
    std::array<std::vector<Step>, kSlots> node, dw;
    bool outer = true;  // embedding, output layer or no kernels: not paired
  };

  struct NodeLane {
    Lane l;
    EventId chain = kNoEvent;  // the microbatch's last node's completion
    int item = -1;             // the stage item whose layer marks are open
  };
  // A node's own host work, in PyTorch calls. Megatron-Core (ScheduleNode._forward /
  // _backward and stream_acquire_context, pipeline_parallel/utils.py 238-345;
  // TransformerLayerNode, models/common/utils.py 219-330, @ d98e8a64), beside its kernels'
  // launches:
  //   forward    the event wait, the stream switch in and out, the event record (4); each
  //              input detached and re-marked for gradients (2 a tensor, about 1.5
  //              inputs a node); the layer state's detaches (residual, shared-expert
  //              output, dispatched probabilities: about one a node)          8
  //   backward   the event wait, stream switch, record (4); the autograd engine's run
  //              (run_backward, 1); the detached tensors' gradients read back, the
  //              incoming gradients' record_stream and the inputs' gradients read (about
  //              4)                                                           9
  //   weights    backward_dw: a stream switch in and out                      2
  // DualPipe's nodes (DeepSeek's own framework): an event record and a stream wait.
  static constexpr int kNodeFwdOps = 8, kNodeBwdOps = 9, kNodeDwOps = 2, kDualPipeNodeOps = 2;

  // rank_program.cpp: the walk over the work items.
  void launch(int stream, Kernel k, Time cpu);
  void wait(EventId e, std::uint32_t tag = 0);  // tag: the trace context, when known
  Time op_cost() const { return price_.op_cost(); }
  Time launch_cost() const { return price_.launch_cost(); }
  Time graph_cost() const { return price_.graph_cost(); }
  static Kernel kernel(std::uint32_t label, Category c, double seconds, int sms = 0,
                       bool reserved = false);
  Place place(const WorkItem& it) const;
  void post_recv(int j);
  std::uint32_t context(const WorkItem& it, int k);
  void emit(const Priced& p, Lane& l, std::uint32_t tag);
  void emit_side(const Priced& p, Kernel& k, Lane& l, Time cpu);
  void join_side(Lane& l);
  std::vector<Step> kernels_of(const WorkItem& it, const Place& pl) const;
  void kernels_of(const WorkItem& it, const Place& pl, std::vector<Step>& out) const;
  void emit_step(const Step& st, Lane& l);
  Lane lane_for(int index, int upto, int stream);
  void expand(int index);
  EventId lane_done(const Lane& l);
  EventId event_of(std::size_t i);
  void finish(int index, const Place& pl, Lane& l);
  // `also`: a second event the send waits for (the shared expert's unjoined output).
  EventId post_send(const WorkItem& it, const Place& pl, EventId done, EventId also = kNoEvent);
  EventId send_after(int index, const Place& pl, Lane& l);
  void device_sync(int index, Lane& l, EventId sent);

  // rank_program_dp.cpp: traffic outside the layers' kernels.
  EventId outer_collective(int stream, const char* name, const StageParams& sp, bool gather,
                           EventId after);
  EventId dp_kernel(int stream, const char* name, double seconds, const PortLoads& loads,
                    EventId after, sim_core::RendezvousId meet);
  EventId dp_collective(int stream, const char* name, const StageParams& sp, bool gather,
                        EventId after);
  void step_start();
  void step_end();
  bool holds_loss() const;
  const char* reduce_name() const;
  void before_layer(Lane& l, int k);
  void gather_at_first_use(int chunk, int k, EventId compute);
  void requantize(Lane& l, int chunk, int k);
  void after_layer(Lane& l, int k);
  void amax_reduce(const WorkItem& it, Lane& l);

  // rank_program_offload.cpp: layer offloading (framework.offload_layers).
  // The decoder layer index of stage item k of the lane's item, or -1.
  int offloaded_layer(const Lane& l, int k) const;
  void offload_copy(Lane& l, int layer, bool out);
  void offload_before(Lane& l, int k);
  void offload_after(Lane& l, int k);

  // rank_program_pairs.cpp: overlapped pairs.
  static NodeSlot slot_of(Module m);
  static int stream_of(NodeSlot s);
  static std::vector<Unit> units_of(const std::vector<Step>& ks,
                                    const std::vector<Step>& weights = {});
  void emit_node(NodeLane& n, const std::vector<Step>& ks, NodeSlot slot, bool weights);
  void begin_unit(NodeLane& n, const Unit& u);
  void end_unit(NodeLane& n);
  void launch_node(NodeLane& n, const Unit& u, NodeSlot s, bool weights);
  void emit_unit(NodeLane& n, const Unit& u, bool forward);
  void expand_overlapped(int index);
  void expand_pair(int index);

  StepState& sim_;
  const KernelPricing& price_;
  sim_core::Gpu& gpu_;
  int rank_;
  std::int64_t lane_;  // position within the stage: pairs pipeline transfers
  std::int64_t tp_group_ = 0, dp_group_ = 0, ep_group_ = 0;
  std::int64_t tp_members_ = 1, dp_members_ = 1, ep_members_ = 1;
  std::int64_t ep_seq_ = 0, tp_seq_ = 0, dp_seq_ = 0;
  std::int64_t outer_group_ = 0, outer_members_ = 1, outer_seq_ = 0;  // HSDP's outer group
  std::vector<WorkItem> items_;
  bool tracing_ = false;
  std::uint32_t context_id_ = 0;  // the last trace context and its key
  std::tuple<int, int, Pass, int> context_key_{};
  std::vector<EventId> recv_event_;  // per item: its receive's completion, if any
  int posted_ = 0;                   // items whose receive has been posted
  std::vector<int> last_bwd_, first_fwd_;
  bool lazy_gather_ = false;  // parameter gathers at first use (gather_at_first_use)
  std::vector<std::vector<EventId>> gather_;  // per chunk, per stage item: its bucket's gather
  std::vector<EventId> wgrad_done_;           // per chunk: its last weight gradients
  // Layer offloading: per microbatch, per offloaded layer, its copy out and back.
  std::vector<std::vector<EventId>> offload_out_, offload_in_;
  EventId last_dp_ = kNoEvent;
  std::vector<HostOp> buf_;
  std::size_t pos_ = 0;
  std::size_t next_item_ = 0;
  int phase_ = 0;
  std::uint32_t amax_label_ = 0, requant_label_ = 0;
  std::array<std::uint32_t, 2> pp_recv_label_{}, pp_send_label_{};  // by forward
  std::vector<Step> steps_;                                         // expand()'s kernels, reused
  std::uint32_t graph_label_ = 0, sync_label_ = 0, pair_sync_label_ = 0;
  bool dualpipe_ = false;  // DualPipe's pairs (else Megatron's all-to-all overlap)
  // Megatron's non-interleaved 1F1B synchronizes the device after each pipeline transfer
  // (RankProgram::device_sync); per stream, the last DP collective or offload copy it waits for.
  bool p2p_sync_ = false;
  std::array<EventId, kTracks> stream_last_{};
  // The shared expert's stream (emit_side): whether a run of its kernels is open, and the
  // event its last kernel records (kNoEvent once the main stream has joined it).
  bool side_open_ = false;
  EventId side_last_ = kNoEvent;
  EventId synced_send_ = kNoEvent;  // the last device sync's send, gating the next item
  bool merge_ = true;               // StepState::merges_kernels
};

}  // namespace moesim::schedules::detail
