#!/usr/bin/env bash
# flex round 10's second device call (benchmarks/flex10-h200/README.md): `iosim measure --impl
# flex --counters` at round 8's two shapes as shipped after the cut (ncu's process started before
# measure imports torch; its target compiling after measure, from the warm caches), the first
# command on a fresh machine, each on cold Inductor/Triton caches of its own:
#     bash benchmarks/flex10_measure.sh OUT_DIR
set -u
out=$1
mkdir -p "$out"
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(date +%s.%N)"; }
measure() {  # LABEL ARGS...
    local label=$1; shift
    local cache; cache=$(mktemp -d)
    local t0; t0=$(date +%s.%N)
    TORCHINDUCTOR_CACHE_DIR="$cache/inductor" TRITON_CACHE_DIR="$cache/triton" timeout 60 \
        python3 -m iosim measure --gpu h200 --impl flex --record "$out/measure.jsonl" "$@" \
        > "$out/measure-$label.log" 2>&1
    echo "measure $label: rc $? wall $(elapsed "$t0") s" >> "$out/times.txt"
    rm -rf "$cache"
}
measure A --n 2048 --d 128 --heads 16 --causal
measure B --n 3000 --d 64 --heads 8 --kv-heads 2 --batch 2
tar -C "$(dirname "$out")" -cf "$out.tar" "$(basename "$out")"
