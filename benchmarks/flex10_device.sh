#!/usr/bin/env bash
# flex round 10's one device call (benchmarks/flex10-h200/README.md):
#     bash benchmarks/flex10_device.sh OUT_DIR
# 1. the fresh flex set FLEXFRESH10 (the judgement: benchmarks/flex10_judge.py);
# 2. `iosim measure --impl flex --counters` at round 8's shape, its ncu target compiling beside
#    measure (parallel, as shipped before) and after it from the warm caches (after-compile,
#    IOSIM_NCU_AFTER_COMPILE=1), each on cold Inductor/Triton caches of its own; the record
#    keeps each phase's time (phases_s); 3. the faster order at round 8's second shape, if the
#    call's time allows. Everything lands in OUT_DIR, then one tar of it (the device returns at
#    most 8 files).
set -u
out=$1
mkdir -p "$out"
begin=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(date +%s.%N)"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
  "$(python3 -c "from iosim.calibrate.ncu import ncu_path; print(ncu_path())")" --version | tail -1
} > "$out/env.txt" 2>&1
timeout 130 python3 benchmarks/impl_validation_h200.py "$out/h200-impl-flexfresh10.json" 100 \
    flexfresh10 flex > "$out/flexfresh10.log" 2>&1
echo "fresh set: rc $? at $(elapsed "$begin") s" >> "$out/times.txt"
measure() {  # ORDER LABEL ARGS...: one measure on cold caches of its own, its wall time
    local order=$1 label=$2; shift 2
    local cache; cache=$(mktemp -d)
    local t0; t0=$(date +%s.%N)
    if [ "$order" = after-compile ]; then export IOSIM_NCU_AFTER_COMPILE=1; else unset IOSIM_NCU_AFTER_COMPILE; fi
    TORCHINDUCTOR_CACHE_DIR="$cache/inductor" TRITON_CACHE_DIR="$cache/triton" timeout 60 \
        python3 -m iosim measure --gpu h200 --impl flex --record "$out/measure.jsonl" "$@" \
        > "$out/measure-$label.log" 2>&1
    echo "measure $label ($order): rc $? wall $(elapsed "$t0") s" >> "$out/times.txt"
    rm -rf "$cache"
}
measure parallel A-parallel --n 2048 --d 128 --heads 16 --causal
measure after-compile A-after --n 2048 --d 128 --heads 16 --causal
faster=$(python3 - "$out/times.txt" <<'PY'
import re, sys
walls = dict(re.findall(r"measure A-\w+ \(([\w-]+)\): rc 0 wall ([\d.]+)", open(sys.argv[1]).read()))
print(min(walls, key=lambda k: float(walls[k])) if walls else "parallel")
PY
)
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 200 else 1)" "$(elapsed "$begin")"; then
    measure "$faster" B-"$faster" --n 3000 --d 64 --heads 8 --kv-heads 2 --batch 2
fi
echo "total $(elapsed "$begin") s" >> "$out/times.txt"
tar -C "$(dirname "$out")" -cf "$out.tar" "$(basename "$out")"
