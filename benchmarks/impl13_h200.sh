#!/bin/bash
# Issue 11, round 13 (helper impl13): after tag impl13-frozen, ncu's DRAM bytes of sdpa-flash
# and iosim-triton over IMPL13FRESH (the judgement of walk_copies: tests/data/h200-impl-dram13.csv;
# python benchmarks/impl13_judge.py). From the repo root:
#   OUT=/some/dir NCU_LIMIT=240 bash benchmarks/impl13_h200.sh
# Everything is tarred into $OUT/impl13.tar.gz (the device returns at most 8 files).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)}
DIR=$OUT/impl13
mkdir -p $DIR
stamp() { echo "$(date +%s) $*" >> $DIR/steps.log; }
stamp start impl13fresh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used \
  --format=csv > $DIR/gpu.txt 2>&1
python3 -c "import json; from iosim.calibrate.env import device_info; print(json.dumps(device_info()))" \
  > $DIR/device.json 2>&1
timeout ${NCU_LIMIT:-240} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py impl13fresh > $DIR/h200-impl-dram13.csv 2> $DIR/ncu13.log
stamp end dram rc=$?
tar -C $OUT -czf $OUT/impl13.tar.gz impl13 && rm -rf $DIR
ls -la $OUT
