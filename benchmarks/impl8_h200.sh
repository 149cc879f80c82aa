#!/bin/bash
# Issue 11, round 8 (helper impl8): ncu's DRAM bytes of sdpa-flash over IMPL8FRESH
# (benchmarks/impl_validation_h200.py), the fresh judgement of the descending walk's DRAM model
# (estimates/l2_descending.py) frozen at tag impl8-frozen. From the repo root:
#   OUT=/some/dir NCU_LIMIT=150 bash benchmarks/impl8_h200.sh
# Everything is tarred into $OUT/impl8.tar.gz (the device returns at most 8 files).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)}
DIR=$OUT/impl8
mkdir -p $DIR
stamp() { echo "$(date +%s) $*" >> $DIR/steps.log; }
stamp start impl8fresh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used \
  --format=csv > $DIR/gpu.txt 2>&1
python3 -c "import json; from iosim.calibrate.env import device_info; print(json.dumps(device_info()))" \
  > $DIR/device.json 2>&1
timeout ${NCU_LIMIT:-150} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py impl8fresh sdpa-flash > $DIR/h200-impl-dram8.csv 2> $DIR/ncu8.log
stamp end dram rc=$?
tar -C $OUT -czf $OUT/impl8.tar.gz impl8 && rm -rf $DIR
ls -la $OUT
