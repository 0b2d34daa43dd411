#!/usr/bin/env bash
# Every GPU benchmark of issue 18 and the GPU-only tests, in one command, for a session lent a GPU
# (an H100/H200 with torch 2.11; about 8 minutes, torch.compile warm-ups included):
#
#     bash benchmarks/gpu_all.sh [OUT_DIR]          # OUT_DIR defaults to $OUT, else ./gpu_results
#
# from the repository root. Stages run in order of what the issue's goals need most; each has its own
# time limit, cut to what is left before the overall deadline (GPU_ALL_BUDGET_S, default 470 s from
# the start; a stage with under 30 s left is skipped and named in the log), so the whole run ends in
# time and every finished stage has its numbers. At most 8 files are written to OUT_DIR (the device tool brings back 8):
#
#     gpu_all.log                 everything printed, stage by stage, with each stage's exit status
#     tests.txt                   pytest: tests/test_gpu_only.py and the flash/sdpa attention tests on CUDA
#     train_cs336.json            gpu_side_by_side.py train at the CS336 shape (Trainer, raw, HF, eager)
#     generate.json               gpu_side_by_side.py generate, batch 1 and 32
#     train_gpt2.json             gpu_side_by_side.py train at the GPT-2-small shape (raw vs HF)
#     kernels.txt                 attention_backends.py and linear_cross_entropy.py (vocabulary padding)
#     train_gpt2_50257.json       raw step, vocabulary 50,257 unpadded vs padded to 128 (item 5)
#
# BENCHMARKS.md ("Issue 18 on a GPU") says where each number goes.
set -u
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-gpu_results}}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
LOG="$OUT_DIR/gpu_all.log"
BUDGET="${GPU_ALL_BUDGET_S:-470}"
START=$(date +%s)
: >"$LOG"

say() { echo "$*" | tee -a "$LOG"; }

# stage NAME LIMIT_S OUTPUT_FILE COMMAND...: run COMMAND (stdout+stderr into the log, and into
# OUTPUT_FILE when it is not "-") for at most LIMIT_S seconds or what is left before the deadline
stage() {
    local name=$1 limit=$2 output=$3; shift 3
    local left=$((BUDGET - ($(date +%s) - START)))
    if [ "$left" -lt 30 ]; then
        say "=== $name: SKIPPED (only $left s left)"
        return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    say "=== $name (limit $limit s): $*"
    local began=$(date +%s) status
    if [ "$output" = "-" ]; then
        timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$LOG"
        status=${PIPESTATUS[0]}
    else
        timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$LOG" "$OUT_DIR/$output" | tail -n 30
        status=${PIPESTATUS[0]}
    fi
    say "=== $name: exit $status after $(( $(date +%s) - began )) s$([ "$status" = 124 ] && echo ' (TIME LIMIT)')"
}

say "gpu_all.sh $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
$PY - <<'EOF' 2>&1 | tee -a "$LOG"
import torch, platform
print(f"python {platform.python_version()}, torch {torch.__version__}, cuda {torch.version.cuda}, "
      f"gpu {torch.cuda.get_device_name() if torch.cuda.is_available() else None}")
EOF

SBS="benchmarks/gpu_side_by_side.py"
stage "GPU-only tests" 150 tests.txt \
    $PY -m pytest -q -p no:cacheprovider -x tests/test_gpu_only.py tests/model/test_flash_attention.py \
        tests/model/test_sdpa_attention.py
stage "train, CS336 shape" 170 - \
    $PY $SBS train --shapes cs336 --modes trainer,raw,hf,raw-eager,hf-eager,trainer-logits \
        --rounds 3 --steps 10 --warmup 3 --json "$OUT_DIR/train_cs336.json"
stage "generate, batch 1 and 32" 110 - \
    $PY $SBS generate --batches 1,32 --new-tokens 256 --rounds 3 --json "$OUT_DIR/generate.json"
stage "train, GPT-2-small shape" 150 - \
    $PY $SBS train --shapes gpt2 --modes raw,hf --rounds 3 --steps 5 --warmup 3 --json "$OUT_DIR/train_gpt2.json"
stage "attention backends" 60 kernels.txt \
    $PY benchmarks/attention_backends.py --shapes cs336,gpt2 --repeats 10
stage "fused loss, vocabulary padding" 40 - \
    bash -c "$PY benchmarks/linear_cross_entropy.py --device cuda --dtype bf16 --tokens 16384 --vocab 50257 \
        --d-model 768 --chunks '' --pad-vocab 128 --repeats 10 --compile 2>&1 | tee -a '$OUT_DIR/kernels.txt'; \
        $PY benchmarks/linear_cross_entropy.py --device cuda --dtype bf16 --tokens 32768 --vocab 10000 \
        --d-model 512 --chunks 4096 --pad-vocab 128 --repeats 10 2>&1 | tee -a '$OUT_DIR/kernels.txt'"
stage "train, GPT-2 shape, vocabulary 50,257 padded or not" 120 - \
    $PY $SBS train --shapes gpt2-50257 --modes raw,raw-pad --rounds 3 --steps 5 --warmup 3 \
        --json "$OUT_DIR/train_gpt2_50257.json"
say "=== done in $(( $(date +%s) - START )) s; results in $OUT_DIR"
