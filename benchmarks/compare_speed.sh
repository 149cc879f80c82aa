#!/usr/bin/env bash
# Wall time of a fresh `iosim compare` process, DRAM estimate included (target: < 0.5 s at N = 4096).
#   bash benchmarks/compare_speed.sh
set -euo pipefail
for args in "--n 4096 --gpu h200" "--n 16384 --d 128 --heads 32 --batch 16 --gpu h200 --causal"; do
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    iosim compare $args > /dev/null
    end=$(date +%s.%N)
    echo "iosim compare $args: $(echo "$end - $start" | bc) s"
  done
done
