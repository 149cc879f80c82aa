#!/bin/bash
# Issue 11, sdpa-cudnn's fresh decode sets on the H200, one call after the round's frozen tag.
# Round 10 (helper cudnn8, tag cudnn8-frozen) ran it as it stands; round cudnn9 (tag
# cudnn9-frozen) with SET=cudnnfresh9 NAME=cudnn9. From the repo root:
#   OUT=/some/dir [SET=cudnnfresh8] [NAME=cudnn8] bash benchmarks/cudnn8_h200.sh
# SET (fresh): sdpa-cudnn timed over benchmarks/impl_validation_h200.py's set of that name (its
# kernel lists say where cuDNN ran its lean reduction), then the folder tarred into one file.
set -u
SET=${SET:-cudnnfresh8}
NAME=${NAME:-cudnn8}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/$NAME
stamp() { echo "$(date +%s) $*" >> $OUT/$NAME/steps.log; }
stamp start $SET
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/$NAME/gpu.txt 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" > $OUT/$NAME/versions.txt 2>&1
timeout ${LIMIT:-100} python3 benchmarks/impl_validation_h200.py $OUT/$NAME/h200-impl-$SET.json ${BUDGET:-70} $SET sdpa-cudnn > $OUT/$NAME/$SET.log 2>&1
stamp end $SET rc=$?
tar -C $OUT -czf $OUT/$NAME.tgz $NAME
ls -la $OUT
