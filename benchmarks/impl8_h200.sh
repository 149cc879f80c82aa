#!/bin/bash
# Issue 11, rounds 8 and 9: ncu's DRAM bytes of sdpa-flash over a fresh set of
# benchmarks/impl_validation_h200.py, the fresh judgement of the descending walk's DRAM model
# frozen at a tag (round 8, helper impl8: IMPL8FRESH after impl8-frozen, the defaults; round 9,
# helper impl9: SET=impl9fresh NAME=impl9 RECORD=h200-impl-dram9 after impl9-frozen). From the
# repo root:
#   OUT=/some/dir NCU_LIMIT=150 [SET=... NAME=... RECORD=...] bash benchmarks/impl8_h200.sh
# Everything is tarred into $OUT/$NAME.tar.gz (the device returns at most 8 files).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
SET=${SET:-impl8fresh}
NAME=${NAME:-impl8}
RECORD=${RECORD:-h200-impl-dram8}
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | tail -1)}
DIR=$OUT/$NAME
mkdir -p $DIR
stamp() { echo "$(date +%s) $*" >> $DIR/steps.log; }
stamp start $SET
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used \
  --format=csv > $DIR/gpu.txt 2>&1
python3 -c "import json; from iosim.calibrate.env import device_info; print(json.dumps(device_info()))" \
  > $DIR/device.json 2>&1
timeout ${NCU_LIMIT:-150} $NCU --csv --page raw --clock-control none --cache-control none \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  python3 benchmarks/impl_dram_h200.py $SET sdpa-flash > $DIR/$RECORD.csv 2> $DIR/ncu${NAME#impl}.log
stamp end dram rc=$?
tar -C $OUT -czf $OUT/$NAME.tar.gz $NAME && rm -rf $DIR
ls -la $OUT
