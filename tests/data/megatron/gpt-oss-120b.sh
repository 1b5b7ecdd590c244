# GPT-OSS 120B as Megatron-LM runs it: the model flags of
# examples/post_training/modelopt/conf/openai/gpt-oss-120b.sh (NVIDIA/Megatron-LM @ d98e8a64,
# MODEL_ARGS, without --padded-vocab-size and the checkpoint interval) with the parallel
# layout and batch of examples/gptoss/02_train.sh's kind, flattened by hand.
torchrun --nproc-per-node 8 --nnodes 2 pretrain_gpt.py \
    --micro-batch-size 1 --global-batch-size 128 \
    --bf16 \
    --no-masked-softmax-fusion \
    --untie-embeddings-and-output-weights \
    --no-rope-fusion \
    --normalization RMSNorm \
    --num-layers 36 \
    --hidden-size 2880 \
    --ffn-hidden-size 2880 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
    --kv-channels 64 \
    --num-experts 128 \
    --moe-ffn-hidden-size 2880 \
    --moe-router-dtype fp32 \
    --moe-router-topk 4 \
    --moe-aux-loss-coeff 0.0 \
    --moe-token-dispatcher-type alltoall \
    --moe-router-score-function softmax \
    --moe-router-load-balancing-type aux_loss \
    --seq-length 4096 \
    --max-position-embeddings 40960 \
    --tokenizer-type HuggingFaceTokenizer \
    --make-vocab-size-divisible-by 128 \
    --use-mcore-models \
    --rotary-percent 1.0 \
    --rotary-base 150000 \
    --no-bias-gelu-fusion \
    --sequence-parallel \
    --export-force-local-attention \
    --no-bias-dropout-fusion \
    --quick-geglu \
    --glu-linear-offset 1.0 \
    --softmax-type learnable \
    --window-attn-skip-freq 2 \
    --enable-gpt-oss \
    --activation-func-clamp-value 7.0 \
    --window-size 127,0 \
    --moe-grouped-gemm --moe-permute-fusion \
    --tensor-model-parallel-size 1 --expert-model-parallel-size 16 \
    --use-distributed-optimizer
