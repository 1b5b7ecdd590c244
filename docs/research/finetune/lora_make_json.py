# Writes docs/research/finetune/lora-family-additions.json (draft llama-family rules for --task lora/peft).
import json
TL = ["v0.3.0", "v0.3.1", "v0.4.0", "v0.4.1", "v0.4.2", "v0.5.0", "v0.5.1"]
T6 = ["v0.6.0"]
R70 = ["llama3_70b"]
FT = "scripts/performance/configs/llama/llama3_llm_finetune.py"
R = "src/megatron/bridge/recipes/llama/llama3.py"
R6 = "src/megatron/bridge/recipes/llama/h100/llama3.py"
PG = "src/megatron/bridge/perf_recipes/llama/gb200/llama3.py"
PG3 = "src/megatron/bridge/perf_recipes/llama/gb300/llama3.py"
PB = "src/megatron/bridge/perf_recipes/llama/b200/llama3.py"
PB3 = "src/megatron/bridge/perf_recipes/llama/b300/llama3.py"
PH = "src/megatron/bridge/perf_recipes/llama/h100/llama3.py"
OV = "scripts/performance/utils/overrides.py"
CO = "src/megatron/bridge/training/comm_overlap.py"
PP = "scripts/performance/perf_plugins.py"

MOCK_L = (f"with --data mock (the default: scripts/performance/argument_parser.py v0.3.0/v0.3.1 :289, v0.4.x :314, v0.5.x :325) "
          f"set_user_overrides rebuilds the dataset as MockGPTDatasetConfig at args.seq_length or model.seq_length "
          f"({OV} v0.3.0 :333-338, v0.3.1 :334-339, v0.4.0/v0.4.1 :340-350, v0.4.2 :345-355, v0.5.x :376-386)")
MOCK_6 = (f"with --data mock (default, v0.6.0 scripts/performance/argument_parser.py:332) set_user_overrides rebuilds the "
          f"dataset at model.seq_length (v0.6.0 {OV}:514-528)")
LIB6 = (f"the flat recipes start from llama3_70b_peft_config (v0.6.0 src/megatron/bridge/perf_recipes/llama/common.py:25) = "
        f"llama3_70b_peft_8gpu_h100_bf16_config ({R}:41 -> {R6}:2578)")

rules = []
def rule(**kw):
    r = {"recipes": R70}
    r.update(kw)
    rules.append(r)

# --- sequence length ---------------------------------------------------------------------
rule(tags=TL, task="lora", stage="recipe", set={"training.seq_length": 4096},
     source=(f"the 70B LoRA functions run 4096 on every GPU but GB200 bf16 (next rule): v0.3.0 {FT}:204-209 (gb300, seq_length=4096 :208), "
             f":274-279 (h100, :278), :239,:241-246 (gb200 fp8_cs/fp8_mx: 4096) into llama3_70b_finetune_config ({R}:766,783), whose "
             f"_llama3_finetune_common sets model_cfg.seq_length ({R}:969); v0.3.1..v0.5.1 {FT}:210-213 (gb300), :243,:247-249 (gb200 "
             f"fp8_cs/fp8_mx), :279-282 (b300), :312-315 (b200), :345-348 (h100), over llama3_70b_peft_config's own 4096 (v0.3.1..v0.4.2 "
             f"{R}:2438-2441; v0.5.x {R}:2465-2468); no b200/b300 LoRA function or workload config at v0.3.0; " + MOCK_L))
rule(tags=TL, task="lora", gpu=["gb200"], dtype=["bf16"], stage="recipe", set={"training.seq_length": 2048},
     source=(f"GB200 BF16 LoRA runs 2048 ('BF16 uses seq_length=2048, FP8 variants use seq_length=4096'): v0.3.0 {FT}:238-239, passed "
             f"as llama3_70b_finetune_config(seq_length=...) :241-246 -> {R}:969; v0.3.1..v0.5.1 {FT}:242-243, applied :247-249 (model, "
             f"dataset, pack size); the mock dataset follows (rule above)"))
rule(tags=T6, task="peft", stage="recipe", set={"training.seq_length": 4096},
     source=(f"v0.6.0 flat PEFT recipes: {PG}:655 (fp8cs), :705 (fp8mx); {PG3}:521, :569, :619; {PB}:382, :430, :480; {PB3}:389, :439, "
             f":489; {PH}:413, :463; {LIB6}, which sets 4096 itself ({R6}:2601-2602); " + MOCK_6))
rule(tags=T6, task="peft", gpu=["gb200"], dtype=["bf16"], stage="recipe", set={"training.seq_length": 2048},
     source=f"v0.6.0 {PG}:603-604 (llama3_70b_peft_8gpu_gb200_bf16_config, docstring :590 'GBS=64, seq_length=2048'); the mock dataset follows")

# --- CUDA graphs (recipe default; the table's TE mlp graphs replace it except on H100) ------
rule(tags=TL, task="lora", stage="recipe", set={"bridge.cuda_graph_impl": "none"},
     source=(f"the LoRA recipe builds no CUDA graphs; the workload config's cuda_graph_impl/scope then replace it (transformer_engine, "
             f"scope mlp on GB200/GB300/B200/B300; H100 configs carry none, so 'none' stands and _set_cuda_graph_overrides empties the "
             f"scope, v0.5.1 {OV}:107-131): v0.3.0 _llama3_finetune_common sets none, Megatron-Core's default 'none' "
             f"(b0cc2706 megatron/core/transformer/transformer_config.py:776); v0.3.1..v0.4.2 {R}:2496-2497; v0.5.x {R}:2523-2524 "
             f"(cuda_graph_scope 'full' beside it, inert under 'none')"))
rule(tags=T6, task="peft", stage="recipe", set={"bridge.cuda_graph_impl": "none"},
     source=(f"library {R6}:2659-2660 ('none', scope 'full'); the GB/B flat recipes then set transformer_engine with scope ['mlp'] "
             f"({PG}:613-614, :663-664, :713-714; {PG3}:528-529, :577-578, :627-628; {PB}:389-390, :438-439, :487-488; {PB3}:396-397, "
             f":446-447, :496-497), which the table holds; the H100 recipes set none, and _benchmark_common empties the scope under "
             f"'none' (v0.6.0 src/megatron/bridge/perf_recipes/_common.py:81-82)"))

# --- DDP / optimizer -----------------------------------------------------------------------
rule(tags=TL, task="lora", stage="recipe",
     set={"framework.distributed_optimizer": True, "framework.overlap_grad_reduce": False,
          "framework.overlap_param_gather": False, "bridge.grad_reduce_in_fp32": False},
     source=(f"the LoRA recipe overlaps nothing and has no distributed optimizer: v0.3.0 DistributedDataParallelConfig(check_for_nan_in_grad=True) "
             f"({R}:993) = Megatron-Core's defaults overlap_grad_reduce/overlap_param_gather/use_distributed_optimizer False (b0cc2706 "
             f"megatron/core/distributed/distributed_data_parallel_config.py:14,17,25), optimizer.use_distributed_optimizer False in the "
             f"LoRA branch ({R}:798); v0.3.1..v0.4.2 {R}:2519-2523 (ddp), :2486 (optimizer); v0.5.x {R}:2546-2550, :2513. Then "
             f"set_llama3_common_peft_configs turns the distributed optimizer on (ddp and optimizer) and keeps gradients BF16 "
             f"(mixed_precision and ddp grad_reduce_in_fp32 False): v0.3.0 {FT}:39-40,44-45, called :210 (gb300), :247 (gb200), :280 "
             f"(h100); v0.3.1..v0.5.1 {FT}:43-44,48-49, called :214, :250, :283, :316, :349. Every LoRA function then adds a "
             f"CommOverlapConfig (rules below). NOTE for the LoRA mechanism: Megatron-Core builds gradient buffers and optimizer groups "
             f"for requires_grad parameters only (b0cc2706 megatron/core/distributed/distributed_data_parallel.py:112; 458c8d0e :115), "
             f"so these settings act on the adapters alone"))
rule(tags=T6, task="peft", stage="recipe",
     set={"framework.distributed_optimizer": True, "framework.overlap_grad_reduce": False,
          "framework.overlap_param_gather": False, "bridge.grad_reduce_in_fp32": False},
     source=(f"library {R6}:2682-2686 (ddp overlaps off, no distributed optimizer, grad_reduce_in_fp32 False), :2649 (optimizer); every "
             f"v0.6.0 PEFT flat recipe then sets grad_reduce_in_fp32 False and the distributed optimizer on inline ({PG}:595-599, :647-651, "
             f":697-701; {PG3}:513-517, :561-565, :611-615; {PB}:374-378, :422-426, :472-476; {PB3}:381-385, :431-435, :481-485; "
             f"{PH}:405-409, :456-460); _benchmark_common also sets grad_reduce_in_fp32 False (v0.6.0 "
             f"src/megatron/bridge/perf_recipes/_common.py:70-72)"))

# --- cross entropy -------------------------------------------------------------------------
rule(tags=TL, task="lora", stage="after_table", set={"framework.cross_entropy": "unfused"},
     source=(f"FINAL cross_entropy_loss_fusion is False: the LoRA recipe turns the fused loss off (v0.3.0 {R}:797, LoRA branch of "
             f"llama3_70b_finetune_config; v0.3.1..v0.4.2 {R}:2502-2503; v0.5.x {R}:2529-2530, with impl 'native'); "
             f"_set_common_perf_overrides, which set_workload_base_configs calls, sets only cross_entropy_fusion_impl 'te' ({OV} v0.3.0 "
             f":64 called :221; v0.3.1 :65/:222; v0.4.0/v0.4.1 :66/:223; v0.4.2 :67-68/:228; v0.5.x :69-70/:256) and nothing under "
             f"scripts/performance sets cross_entropy_loss_fusion at these tags (git grep: only the v0.5.x README's --deterministic table, "
             f"scripts/performance/README.md:295, which sets it False); Megatron-Core reads the impl only under the fusion and otherwise "
             f"runs tensor_parallel.vocab_parallel_cross_entropy (megatron/core/models/common/language_module/language_module.py "
             f"b0cc2706/55ac7082 :140-167; d7288711/2edffadb :141-168; d0b3b775/458c8d0e :156-183) = moesim's 'unfused' "
             f"(workload/options.hpp CrossEntropy::unfused: FP32 passes, FP32 exponentials kept)"))
rule(tags=T6, task="peft", stage="after_table", set={"framework.cross_entropy": "unfused"},
     source=(f"library {R6}:2665-2666 (cross_entropy_loss_fusion False, impl 'native'); _benchmark_common sets only "
             f"cross_entropy_fusion_impl 'te' (v0.6.0 src/megatron/bridge/perf_recipes/_common.py:30,68, via _llama_benchmark_common, "
             f"src/megatron/bridge/perf_recipes/llama/common.py:54; called {PG}:621, :671, :721; {PG3}:536, :585, :635; {PB}:397, :446, "
             f":495; {PB3}:404, :454, :504; {PH}:430, :477); no PEFT flat recipe sets cross_entropy_loss_fusion (git grep v0.6.0 "
             f"perf_recipes: only deepseek/gb300/deepseek_v4.py:93); Megatron-Core cd4afffa language_module.py:167-194 -> unfused"))

# --- CommOverlapConfig the LoRA functions add ---------------------------------------------
CO_L = (f"its setup, with the distributed optimizer on, overlaps the gradient reduce-scatter and the parameter all-gather at DP > 1 "
        f"({CO} _get_optimizer_overlap_cfgs v0.3.0/v0.3.1 :539-542, applied to the DDP config :599-606; v0.4.x :576-579, :636-643; "
        f"v0.5.x :563-566, :623-630)")
rule(tags=TL, task="lora", stage="after_table", when={"dp_gt_1": True},
     set={"framework.overlap_grad_reduce": True, "framework.overlap_param_gather": True},
     source=(f"every 70B LoRA function sets cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=bool(TP > 1)) after "
             f"set_workload_base_configs (v0.3.0 {FT}:212 gb300, :254 gb200, :282 h100; v0.3.1..v0.5.1 {FT}:216 gb300, :257 gb200, :290 "
             f"b300, :323 b200, :351 h100) and " + CO_L + ". DP of the 8-GPU LoRA configs: 2..8, except H100 fp8_cs (TP2 PP4: DP 1, no "
             f"overlap). CONDITION: Bridge decides at setup on the FINAL DP; this rule reads DP right after the table (before -tp/-pp)"))
rule(tags=T6, task="peft", stage="after_table", when={"dp_gt_1": True},
     set={"framework.overlap_grad_reduce": True, "framework.overlap_param_gather": True},
     source=(f"every v0.6.0 PEFT flat recipe carries a CommOverlapConfig ({PG}:600, :652, :702; {PG3}:518, :566, :616; {PB}:379, "
             f":427, :477; {PB3}:386, :436, :486; {PH}:410 (bf16), :472 (fp8cs, DP 1)); its setup overlaps DP at DP > 1 with the "
             f"distributed optimizer (v0.6.0 {CO}:576-579, applied :636-643)"))
rule(tags=TL, task="lora", stage="after_table", when={"tp_gt_1": True}, set={"framework.tp_comm_overlap": True},
     source=(f"CommOverlapConfig(tp_comm_overlap=bool(TP > 1)) with the TABLE's TP and no userbuffers config (TE's default): v0.3.0 "
             f"{FT}:212, :254, :282; v0.3.1..v0.5.1 {FT}:216, :257, :290, :323, :351; only H100 fp8_cs has TP > 1 (TP2, sequence "
             f"parallel: WorkloadBaseConfig.sequence_parallel = TP > 1, scripts/performance/utils/utils.py v0.3.0 :69-71, v0.5.1 :74-76). "
             f"Bridge switches it off below TP 2 or without sequence parallelism ({CO}:439-448 at v0.3.0; :442-451 at v0.4.0..v0.5.1), "
             f"as importer/bridge_scenario.cpp finish() does"))
rule(tags=T6, task="peft", stage="after_table", when={"tp_gt_1": True}, set={"framework.tp_comm_overlap": True},
     source=(f"v0.6.0 {PH}:464,468,472 (h100 fp8cs: TP2, sequence_parallel True, CommOverlapConfig(tp_comm_overlap=True)); every other "
             f"PEFT recipe is TP1 with tp_comm_overlap False ({PG}:600,616; {PG3}:518,531; {PB}:379,392; {PB3}:386,399; {PH}:410,425)"))
rule(tags=T6, task="peft", stage="after_table", when={"dp_gt_1": True},
     configs=["LLAMA3_70B_PEFT_CONFIG_GB200_BF16", "LLAMA3_70B_PEFT_CONFIG_GB200_FP8_CS", "LLAMA3_70B_PEFT_CONFIG_GB300_FP8_CS",
              "LLAMA3_70B_PEFT_CONFIG_B200_FP8_CS", "LLAMA3_70B_PEFT_CONFIG_H100_BF16"],
     set={"framework.overlap_param_gather_with_optimizer_step": True},
     source=(f"v0.6.0 _enable_overlap_param_gather_with_optimizer_step (src/megatron/bridge/perf_recipes/_common.py:90-94) in exactly "
             f"these five PEFT recipes ({PG}:622 bf16, :672 fp8cs; {PG3}:586 fp8cs; {PB}:447 fp8cs; {PH}:431 bf16), all PP > 1, VP 20, "
             f"DP 2-4; not in the fp8mx recipes, GB300/B200/B300 bf16, B300 fp8cs or H100 fp8cs (DP 1). The exact-GPU flat recipe skips "
             f"set_post_overrides (launcher post_when not_exact_gpus). Before v0.6.0 no rule is needed: importer post() (set_post_overrides, "
             f"{OV} v0.5.x :527-532, v0.3.0 :428-434) sets it at DP, PP, VP > 1 without fp8_mx/nvfp4 once the rule above has turned "
             f"overlap_param_gather on, i.e. for v0.3.0..v0.4.1 H100 bf16 and v0.4.2..v0.5.1 GB200 bf16/fp8_cs, GB300 fp8_cs, B200 fp8_cs, "
             f"H100 bf16 — the same set [derived]"))
rule(tags=TL, task="lora", stage="final", when={"dp_gt_1": True}, set={"framework.ddp_bucket_size": 134217728},
     source=(f"CommOverlapConfig.setup sets bucket_size 128 MiB at DP > 1 with the distributed optimizer ({CO} v0.3.0/v0.3.1 :540, "
             f"v0.4.x :577, v0.5.x :564; applied :599-606 / :636-643 / :623-630); the pretrain rule is task pretrain. With only the "
             f"adapters trainable each model chunk's gradient buffer (<= 23.6 M BF16 params over all 80 layers) fits in one bucket [derived]. "
             f"UNSURE-EMITTED as in the pretrain rule: inert at DP 1"))
rule(tags=T6, task="peft", stage="final", when={"dp_gt_1": True}, set={"framework.ddp_bucket_size": 134217728},
     source=f"v0.6.0 {CO}:577 (applied :636-643) through every PEFT recipe's CommOverlapConfig (rule above)")

# --- the LoRA settings ---------------------------------------------------------------------
LORA = {"rank": 16, "alpha": 32, "targets": ["linear_qkv"]}
rule(tags=TL, task="lora", stage="after_table", set={"training.lora": LORA},
     source=(f"NEW KEY. LoRA dim 16, alpha 32 (scale alpha/dim = 2), dropout 0.0, targets linear_qkv only: v0.3.0 llama3_70b_finetune_config "
             f"LoRA branch {R}:792-794 (default_peft_config('lora') -> LoRA(), src/megatron/bridge/recipes/utils/finetune_utils.py:43-44; "
             f"dim 16 :793, alpha 32 :794); v0.3.1..v0.4.2 {R}:2444-2448 (finetune_utils.py v0.3.1 :44, v0.4.x :46); v0.5.x {R}:2471-2475 "
             f"(finetune_utils.py :49); target_modules = ['linear_qkv'] after the table: v0.3.0 {FT}:215 (gb300), :257 (gb200), :285 "
             f"(h100); v0.3.1..v0.5.1 {FT}:219 (gb300), :260 (gb200), :293 (b300), :326 (b200), :354 (h100) — over the class default "
             f"['linear_qkv','linear_proj','linear_fc1','linear_fc2'], dim 32, alpha 32, dropout 0.0 (src/megatron/bridge/peft/lora.py "
             f"v0.3.0/v0.3.1 :82-87, v0.4.x :83-88, v0.5.x :97-102); dropout 0 makes the adapter's dropout nn.Identity (no kernel). "
             f"The model gets it through pretrain()'s PEFT pre-wrap hook (src/megatron/bridge/training/setup.py v0.3.0 :193-195, v0.5.1 "
             f":217-219), which freezes every base parameter before DDP wrapping"))
rule(tags=T6, task="peft", stage="after_table", set={"training.lora": LORA},
     source=(f"NEW KEY. library {R6}:2607-2611 (default_peft_config('lora') -> LoRA(), src/megatron/bridge/recipes/utils/dataset_utils.py:70; "
             f"dim 16, alpha 32), class defaults dropout 0.0 (src/megatron/bridge/peft/lora.py:101-106); target_modules ['linear_qkv'] in "
             f"every PEFT flat recipe ({PG}:602, :654, :704; {PG3}:520, :568, :618; {PB}:381, :429, :479; {PB3}:388, :438, :488; "
             f"{PH}:412, :462); hook src/megatron/bridge/training/setup.py:335-337"))

# --- cuDNN norm (MXFP8 fused quantize) ------------------------------------------------------
rule(tags=TL, task="lora", dtype=["fp8_mx"], stage="post", set={"stack.norm_quant_fusion": False},
     source=(f"PerfEnvPlugin keeps NVTE_NORM_FWD/BWD_USE_CUDNN (default on, scripts/performance/utils/executors.py:44-45 at every tag) only "
             f"for listed pretrain runs and, from v0.3.1, llama SFT — never for train_task 'lora', so every LoRA run loses the cuDNN norm and "
             f"its fused MXFP8 quantize: v0.3.0 {PP}:278-299; v0.3.1 :281-314 (sft keep :301); v0.4.0/v0.4.1 :301-334 (:321); v0.4.2 "
             f":322-355 (:342); v0.5.0/v0.5.1 :321-351 (:343); bf16/fp8_cs lose it too, with no scenario key"))
rule(tags=T6, task="peft", dtype=["fp8_mx"], stage="recipe", set={"stack.norm_quant_fusion": False},
     source=(f"v0.6.0: the fp8mx PEFT recipes' env_vars lack NVTE_NORM_*_USE_CUDNN ({PG}:723-736; {PG3}:637-650; {PB}:497-510; "
             f"{PB3}:506-521), scripts/performance/bootstrap.py:43-50 installs only those (setdefault), and no v0.6.0 scripts/performance "
             f"python file sets them (git grep: only rubin_launch_interactive.sh:73), as the pretrain rule reads it"))

# --- not modeled ---------------------------------------------------------------------------
nm = []
def n(**kw): nm.append(kw)
n(tags=TL, task="lora", recipes=R70,
  setting="model.disable_parameter_transpose_cache True (set_llama3_common_peft_configs)",
  why=("TransformerEngine's linears get is_first_microbatch None, so FP8/MXFP8 weight casts and transposes are redone every "
       "micro-batch instead of once per step; with LoRA the frozen base weights never change, and under the fp8 precisions "
       "(fp8_param_gather/fp8_param True) they are already FP8 tensors, so how much TE redoes is uncertain; moesim has no key; "
       "BF16: no effect"),
  source=(f"v0.3.0 {FT}:42; v0.3.1..v0.5.1 {FT}:46; Megatron-Core b0cc2706 megatron/core/extensions/transformer_engine.py:516,672,761,893"))
n(tags=T6, task="peft", recipes=R70,
  setting="model.disable_parameter_transpose_cache True (every PEFT flat recipe)",
  why="as for --task lora before v0.6.0: weight-cast cadence, no moesim key",
  source=f"v0.6.0 {PG}:597, :649, :699; {PG3}:515, :563, :613; {PB}:376, :424, :474; {PB3}:383, :433, :483; {PH}:407, :458")
n(tags=TL, task="lora", recipes=R70,
  setting=("launcher environment for LoRA: cuDNN LayerNorm popped (every dtype; the MXFP8 fused quantize is the norm_quant_fusion rule); "
           "no NCCL_P2P_NET_CHUNKSIZE (pretrain/SFT only); PYTORCH_CUDA_ALLOC_CONF expandable_segments and NCCL_GRAPH_REGISTER 0 for 70B "
           "fp8 LoRA on gb300/gb200/h100 at v0.4.2, for every run from v0.5.0"),
  why="allocator, NCCL chunking and kernel-choice environment with no scenario key",
  source=(f"v0.3.0 {PP}:262-276 (allocator: pretrain only), :278-299, :446-449; v0.3.1 :281-314, :463-467; v0.4.0/v0.4.1 :301-334, "
          f":486-490; v0.4.2 :312-317 (train_task in ['sft','lora']), :322-355, :549-553; v0.5.x scripts/performance/utils/executors.py:39-50 "
          f"(PERF_ENV_VARS, allocator :48-49), {PP}:321-351, v0.5.0 :543-548, v0.5.1 :546-551"))
n(tags=T6, task="peft", recipes=R70,
  setting=("each PEFT recipe's env_vars: CUDA_DEVICE_MAX_CONNECTIONS 32 (1 on H100 fp8cs), NCCL_GRAPH_REGISTER 0, PYTORCH_CUDA_ALLOC_CONF "
           "expandable_segments, TORCH_NCCL_AVOID_RECORD_STREAMS 1, NCCL_NVLS_ENABLE 0, NVTE_FWD/BWD_LAYERNORM_SM_MARGIN 20, "
           "NCCL_IGNORE_CPU_AFFINITY 1 (b300); no cuDNN LayerNorm opt-in"),
  why="process environment with no scenario key",
  source=f"v0.6.0 {PG}:624-637, :674-687, :723-736; {PG3}:538-551, :588-601, :637-650; {PB}:399-412, :449-462, :497-510; {PB3}:406-421, :456-471, :506-521; {PH}:433-446, :479-492; scripts/performance/bootstrap.py:43-50")
n(tags=["v0.4.2", "v0.5.0", "v0.5.1"], task="lora", recipes=R70,
  setting="dist.use_tp_pp_dp_mapping True when PP > 1 (rank order tp-cp-ep-pp-dp instead of tp-cp-ep-dp-pp)",
  why=("rank order only; every LoRA config is 8 GPUs in one NVLink domain (an 8-GPU HGX node, or two GB200/GB300 trays of one "
       "NVL72), so no collective changes link class [derived]; moesim has no rank-order key"),
  source=f"{OV} v0.4.2 :447-449, v0.5.x :490-492; src/megatron/bridge/training/initialize.py:817 at v0.5.1; absent at v0.3.0..v0.4.1 (git grep)")
n(tags=T6, task="peft", recipes=R70,
  setting="dist.use_tp_pp_dp_mapping True when PP > 1",
  why="rank order only, one NVLink domain [derived]; no key",
  source=f"v0.6.0 {OV}:635-637")
n(tags=TL, task="lora", recipes=R70, gpu=["h100"], dtype=["fp8_cs"],
  setting=("H100 fp8_cs (TP2): TP communication overlap without a userbuffers config (TE's default), and the linear_qkv adapter's own "
           "sequence-parallel all-gather of its [T, h] input, which Bridge keeps whenever TP overlap is on"),
  why=("moesim's tp_comm_overlap has one overlap model; the adapter collective belongs to the LoRA mechanism (not yet in moesim). "
       "not_modeled entries have no 'when': keyed by GPU and dtype, only the H100 fp8_cs config has TP > 1"),
  source=(f"v0.3.0 {FT}:282; v0.3.1..v0.5.1 {FT}:351; {CO}:582-588 at v0.3.0 (no cfg -> TE default); src/megatron/bridge/peft/utils.py "
          f"v0.3.0 :146-156, :616-621; v0.5.1 :575-585, :1109-1114"))
n(tags=T6, task="peft", recipes=R70, gpu=["h100"], dtype=["fp8_cs"],
  setting="H100 fp8cs (TP2): TP overlap without a userbuffers config; the adapter's own SP all-gather under TP overlap",
  why="as for --task lora",
  source=f"v0.6.0 {PH}:472; src/megatron/bridge/peft/utils.py:611-621, :1213-1218")
n(tags=TL, recipes=R70, task="lora", gpu=["h100"], dtype=["bf16"],
  setting=("PEFT + recompute: maybe_enable_recompute_inputs_grad makes every TransformerBlock input require grad when only adapters "
           "train (H100 bf16, full recompute)"),
  why=("PP rank 0's first chunk then computes layer 0's input gradient (otherwise skipped: frozen embedding) so the checkpointed "
       "backward runs; one extra dgrad-of-input chain on one rank, no key"),
  source="src/megatron/bridge/peft/recompute.py:43-120 (same blob 82aea968 v0.3.0..v0.6.0), called from src/megatron/bridge/peft/base.py:103 (v0.3.0), :120 (v0.5.1, v0.6.0)")
n(tags=T6, task="peft", recipes=R70, gpu=["h100"], dtype=["bf16"],
  setting="PEFT + recompute: TransformerBlock inputs forced to require grad",
  why="as for --task lora",
  source="v0.6.0 src/megatron/bridge/peft/recompute.py:43-120, src/megatron/bridge/peft/base.py:120")

edits = {
    "not_modeled_source_append": {
        "index_in_llama_not_modeled": 4,
        "append": (f"; PEFT recipes: v0.3.0 {R}:1006-1008 (_llama3_finetune_common, LoRA too); v0.3.1..v0.4.2 {R}:2472-2474; "
                   f"v0.5.x {R}:2499-2501; v0.6.0 {R6}:2635-2637"),
        "why": "manual_gc (llama not_modeled [4], no task) also prints for LoRA; its source names only pretrain and SFT recipes"
    }
}

importer_changes = [
    {"where": "importer/import_bridge.cpp BridgeImporter::task() (the lora/peft refusal)",
     "change": ("accept lora (tags v0.3.0..v0.5.1) and peft (v0.6.0) on --data mock exactly as sft (v0.2.x refused: "
                "SQuAD packed hard-wired, v0.2.0 scripts/performance/configs/llama3/llama3_llm_finetune.py:164-213 keeps the four default "
                "targets incl. the row-parallel linear_proj/linear_fc2 adapters); keep refusing until the scenario key training.lora is "
                "priced (frozen base: no base wgrad/optimizer state, adapter GEMMs/collectives, DP over adapters only). Derived note: "
                "'lora (--task lora|peft, --data mock): LoRA rank 16, alpha 32 on linear_qkv; base weights frozen; synthetic "
                "seq_length-token causal sequences, unpacked; Megatron-Bridge reports its TFLOPS with the full pretraining formula here "
                "(its LoRA formula needs SQuAD packs)'")},
    {"where": "--pretrained_checkpoint (importer/bridge_args.cpp:134, ignored 'checkpoints')",
     "change": ("a PEFT run stops at setup without it: peft_pre_wrap_hook raises ValueError('Invalid pretrained checkpoint directory') "
                "when cfg.checkpoint.pretrained_checkpoint is None (src/megatron/bridge/training/setup.py v0.3.0 :386-387, v0.5.1 :472-473, "
                "v0.6.0 :609-613); _peft_common leaves it None (src/megatron/bridge/recipes/common.py:314 at v0.5.1) and the launcher sets "
                "it only from the flag (scripts/performance/utils/overrides.py v0.3.0 :313-314, v0.5.1 :356-357, v0.6.0 :494-495). "
                "Either refuse lora/peft without the flag ('Megatron-Bridge stops there too') or accept it with an assumed note; "
                "loading happens before the timed steps. The example command in the brief has no --pretrained_checkpoint. "
                "LEAD'S DECISION")},
    {"where": "importer/bridge_perf_recipe.cpp BridgeImporter::table() (the peft refusal)",
     "change": ("allow peft 'lora' when q_.task is lora or peft; refuse a LoRA workload config under pretrain/sft and a non-LoRA one "
                "under lora/peft (both impossible through the launcher's naming, a guard only)")},
    {"where": "importer/bridge_scenario.cpp finish() (the 'partial full recompute' refusal)",
     "change": ("map full block recompute that covers every layer of every virtual stage to framework.recompute_modules ['full']: "
                "Megatron-Core's block method checkpoints the first recompute_num_layers layers of EACH model chunk (the chunk's own "
                "TransformerBlock: b0cc2706 megatron/core/transformer/transformer_block.py:326, :544-560; 458c8d0e "
                "megatron/core/recompute.py:149-163, transformer_block.py:321), Bridge sets method block (scripts/performance/utils/"
                "overrides.py:150-153 at v0.5.1; v0.6.0 src/megatron/bridge/perf_recipes/llama/h100/llama3.py:421-423). H100 bf16 LoRA "
                "(PP4 x VP20 = 80 chunks of one layer, recompute_num_layers 1) is then every layer, as moesim's ['full'] prices it. "
                "Condition: n >= the largest decoder-layer count of any virtual stage (even split, or the pp_layout's); under fp8 the "
                "window can shift past layers whose input needs no grad (recompute.py:157-161) — bf16 only here. Without this the 8 "
                "H100 bf16 LoRA configs (one per tag v0.3.0..v0.6.0) are refused. A family rule cannot express it: finish() clears "
                "recompute_modules when the granularity is not selective (bridge_scenario.cpp:135-145)")},
    {"where": "importer/bridge_overrides.cpp Hydra table (:61 model.cross_entropy_fusion_impl -> framework.cross_entropy)",
     "change": ("add model.cross_entropy_loss_fusion (bool): false -> 'unfused', true -> the impl; and map a given "
                "cross_entropy_fusion_impl to framework.cross_entropy only while the loss fusion is on, else a LoRA run with "
                "model.cross_entropy_fusion_impl=te would be priced fused")},
    {"where": "importer/import_bridge.cpp rule_applies (:49, task string equality)",
     "change": ("this draft duplicates every rule for task 'lora' (<= v0.5.1) and 'peft' (v0.6.0). Either accept a task array there, or "
                "normalise q_.task 'peft' -> 'lora' after resolve_bridge_recipe (which needs 'peft' for the v0.6.0 table key), then "
                "merge the pairs")},
    {"where": "importer/bridge_scenario.cpp finish() name/description (:224-232)",
     "change": "name bridge-llama3_70b-lora-{gpu}-{dtype}-{release} (peft too); description 'LoRA (rank 16, alpha 32, linear_qkv) on the launcher's mock data'"},
]
schema_additions = {
    "training.lora": {
        "description": "LoRA adapters on a frozen base (Megatron-Bridge PEFT): rank (dim), alpha (scale alpha/rank), target linears; absent: full-parameter training",
        "type": "object",
        "properties": {
            "rank": {"type": "integer", "minimum": 1},
            "alpha": {"type": "number", "exclusiveMinimum": 0},
            "targets": {"type": "array", "uniqueItems": True, "minItems": 1,
                        "items": {"type": "string", "enum": ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"]}}},
        "required": ["rank", "alpha", "targets"],
        "additionalProperties": False,
        "note": "dropout is 0 in every Bridge LoRA perf recipe (an nn.Identity, no kernel); add a dropout key only if a non-zero case appears"}
}

about = (
    "Draft (not merged, 2026-12) llama-family rules for Megatron-Bridge LoRA fine-tuning of llama3_70b as the performance launcher runs it: "
    "--task lora at v0.3.0..v0.5.1 (v0.4.1 included; v0.3.0 GB200/GB300/H100 only, B200/B300 from v0.3.1) and --task peft at v0.6.0, "
    "on the default --data mock (MockGPTDatasetConfig at model.seq_length replaces the recipe's SQuAD packed dataset, so the recipes' "
    "packed_sequence/pad_cu_seqlens/pad_to_max_length settings are inert and not listed). Same format as sft-family-additions.json: "
    "every rule carries task 'lora' or 'peft' (rule_applies compares the string); stages as in the families file (recipe, after_table, "
    "post, final); 'when' dp_gt_1/tp_gt_1 read the table's sizes. Beyond the workload config table: sequence length (GB200 bf16 2048, "
    "all else 4096), the PEFT recipe's DDP (no overlap) plus set_llama3_common_peft_configs (distributed optimizer, BF16 grads), the "
    "CommOverlapConfig(tp_comm_overlap=TP>1) every LoRA function adds after the table (DP overlap + 128 MiB buckets at DP>1, TP overlap "
    "on H100 fp8_cs), overlap_param_gather_with_optimizer_step (v0.6.0 recipe rule; earlier the generic post() gives the same configs), "
    "the unfused loss (cross_entropy_loss_fusion False survives the perf overrides, which set only the impl), the recipe's graphs "
    "(none) under the table's TE mlp graphs, the cuDNN norm dropped for fp8_mx, and the NEW scenario key training.lora {rank 16, alpha 32, "
    "targets [linear_qkv]} (dropout 0). These rules make a LoRA run pretraining-shaped in everything but training.lora: the import stays "
    "refused until moesim prices training.lora (frozen base: no base weight gradients or optimizer state; adapter GEMMs in BF16 "
    "Megatron linears, scale and add kernels; DP reduce-scatter/all-gather and Adam over ~23.6 M adapter params; base weights only "
    "in memory). Citations: TAG path:line in NVIDIA-NeMo/Megatron-Bridge (blobs: finetune functions eb8038e3 at v0.3.0, b6f8c5c9 at "
    "v0.3.1..v0.5.1; recipes/llama/llama3.py 59d6a863 v0.3.0, 323a4e7a v0.3.1, 3f1aa7ec v0.4.0..v0.4.2, 3ca001a5 v0.5.x), Megatron-LM "
    "pins by sha. Inventory and published rows: inventory.md beside this file.")

out = {"about": about, "rules": rules, "not_modeled": nm, "edits": edits,
       "importer_changes": importer_changes, "schema_additions": schema_additions}
json.dump(out, open("docs/research/finetune/lora-family-additions.json", "w"), indent=1, ensure_ascii=False)
print(len(rules), "rules;", len(nm), "not_modeled")
