#!/usr/bin/env bash
# `iosim measure` with Nsight Compute counters on five shapes (issue 11 item 5, acceptance
# "measure on one shape finishes in under 30 s on the H200"): each whole command timed, every
# point appended to $OUT/h200-measure-ncu.jsonl. Run from the repository root on the GPU:
#   OUT=out bash benchmarks/measure_ncu_h200.sh
set -u
OUT=${OUT:?set OUT to a folder}
RECORD=$OUT/h200-measure-ncu.jsonl
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1; } \
    > "$OUT/env.txt" 2>&1
shape() {  # one measure command, its wall time appended to times.txt
    local start ms
    start=$(date +%s%N)
    python3 -m iosim measure --gpu h200 --record "$RECORD" "$@" 2>&1 | tee -a "$OUT/log.txt"
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    printf '%d.%d s  iosim measure --gpu h200 %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*" \
        | tee -a "$OUT/times.txt"
}
shape --impl sdpa-flash --n 4096 --d 128 --heads 32 --batch 2
shape --impl sdpa-flash --n 1 --n-kv 65536 --d 128 --heads 32 --kv-heads 8
shape --impl sdpa-flash --n 3000 --d 64 --heads 16 --kv-heads 4 --batch 2 --causal --dtype bf16
shape --impl iosim-triton --n 2048 --d 64 --heads 16 --batch 2
shape --impl flex --n 2048 --d 128 --heads 16 --causal
