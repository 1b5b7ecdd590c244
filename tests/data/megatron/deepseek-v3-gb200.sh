# NVIDIA's GB200 DeepSeek-V3 reproduction (Megatron-LM docs/discussions/deepseek-v3-gb200-optimization/
# deepseek-v3-gb200-reproduce-guide.md, removed in commit 3c1b98efdc; read at its parent): the guide's
# environment variables and launch script, as published (paths are the guide's placeholders).
export CUDA_DEVICE_MAX_CONNECTIONS=1
export NVTE_FWD_LAYERNORM_SM_MARGIN=0
export NVTE_BWD_LAYERNORM_SM_MARGIN=0
export NVLINK_DOMAIN_SIZE=72
export NVTE_ALLOW_NONDETERMINISTIC_ALGO=1
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export NCCL_NVLS_ENABLE=0
export NVTE_FUSED_ATTN=1
export NVTE_NORM_FWD_USE_CUDNN=1
export NVTE_NORM_BWD_USE_CUDNN=1
export PYTHONWARNINGS=ignore
export NCCL_DEBUG=VERSION
export NCCL_GRAPH_REGISTER=0

/path/to/bindpcie \
/path/to/megatron-lm/pretrain_gpt.py \
--distributed-timeout-minutes 60 \
--tensor-model-parallel-size 1 \
--pipeline-model-parallel-size 8 \
--expert-model-parallel-size 32 \
--context-parallel-size 1 \
--expert-tensor-parallel-size 1 \
--use-distributed-optimizer \
--overlap-grad-reduce \
--overlap-param-gather \
--use-mcore-models \
--sequence-parallel \
--use-flash-attn \
--disable-bias-linear \
--micro-batch-size 1 \
--global-batch-size 2048 \
--train-samples 585937500 \
--exit-duration-in-mins 220 \
--no-save-optim \
--no-check-for-nan-in-loss-and-grad \
--cross-entropy-loss-fusion \
--cross-entropy-fusion-impl te \
--manual-gc \
--manual-gc-interval 10 \
--enable-experimental \
--transformer-impl transformer_engine \
--seq-length 4096 \
--data-cache-path /path/to/data_cache \
--tokenizer-type HuggingFaceTokenizer \
--tokenizer-model unsloth/DeepSeek-V3 \
--data-path /path/to/data \
--split 99,1,0 \
--no-mmap-bin-files \
--no-create-attention-mask-in-dataloader \
--num-workers 6 \
--num-layers 61 \
--hidden-size 7168 \
--ffn-hidden-size 18432 \
--num-attention-heads 128 \
--kv-channels 128 \
--max-position-embeddings 4096 \
--position-embedding-type rope \
--rotary-base 10000 \
--make-vocab-size-divisible-by 3232 \
--normalization RMSNorm \
--norm-epsilon 1e-6 \
--swiglu \
--untie-embeddings-and-output-weights \
--multi-latent-attention \
--attention-dropout 0.0 \
--hidden-dropout 0.0 \
--clip-grad 1.0 \
--weight-decay 0.1 \
--qk-layernorm \
--lr-decay-samples 584765624 \
--lr-warmup-samples 1536000 \
--lr-warmup-init 3.9e-7 \
--lr 3.9e-6 \
--min-lr 3.9e-7 \
--lr-decay-style cosine \
--adam-beta1 0.9 \
--adam-beta2 0.95 \
--num-experts 256 \
--moe-layer-freq ([0]*3+[1]*58) \
--moe-ffn-hidden-size 2048 \
--moe-shared-expert-intermediate-size 2048 \
--moe-router-load-balancing-type seq_aux_loss \
--moe-router-topk 8 \
--moe-grouped-gemm \
--moe-aux-loss-coeff 1e-4 \
--moe-router-group-topk 4 \
--moe-router-num-groups 8 \
--moe-router-pre-softmax \
--moe-router-padding-for-quantization \
--moe-router-topk-scaling-factor 2.5 \
--moe-router-score-function sigmoid \
--moe-router-enable-expert-bias \
--moe-router-bias-update-rate 1e-3 \
--moe-router-dtype fp32 \
--moe-permute-fusion \
--moe-router-fusion \
--q-lora-rank 1536 \
--kv-lora-rank 512 \
--qk-head-dim 128 \
--qk-pos-emb-head-dim 64 \
--v-head-dim 128 \
--rotary-scaling-factor 40 \
--mscale 1.0 \
--mscale-all-dim 1.0 \
--eval-iters 32 \
--eval-interval 200 \
--no-load-optim \
--no-load-rng \
--auto-detect-ckpt-format \
--load None \
--save /path/to/checkpoints \
--save-interval 500 \
--dist-ckpt-strictness log_all \
--init-method-std 0.02 \
--log-timers-to-tensorboard \
--log-memory-to-tensorboard \
--log-validation-ppl-to-tensorboard \
--log-throughput \
--log-interval 1 \
--logging-level 40 \
--tensorboard-dir /path/to/tensorboard \
--wandb-project deepseek-v3-benchmarking-v0.15 \
--wandb-exp-name DeepSeek-V3-TP1PP8EP32CP1VPP4-MBS1GBS2048-v0.15 \
--bf16 \
--enable-experimental \
--recompute-granularity selective \
--recompute-modules moe_act mlp \
--cuda-graph-impl transformer_engine \
--cuda-graph-scope attn moe_router moe_preprocess \
--te-rng-tracker \
--pipeline-model-parallel-layout "Et|(tt|)*30L" \
--moe-router-force-load-balancing \
--moe-token-dispatcher-type flex \
--moe-flex-dispatcher-backend hybridep \
--moe-hybridep-num-sms 32 \
--fp8-recipe mxfp8 \
--fp8-format e4m3 \
--fp8-param-gather \
--reuse-grad-buf-for-mxfp8-param-ag \
--use-precision-aware-optimizer \
--main-grads-dtype fp32 \
--main-params-dtype fp32 \
--exp-avg-dtype bf16 \
--exp-avg-sq-dtype bf16 \
