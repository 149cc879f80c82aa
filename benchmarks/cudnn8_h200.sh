#!/bin/bash
# Issue 11, round 10 (helper cudnn8) on the H200, one call after tag cudnn8-frozen. From the repo root:
#   OUT=/some/dir bash benchmarks/cudnn8_h200.sh
# cudnnfresh8 (fresh): sdpa-cudnn timed over benchmarks/impl_validation_h200.py CUDNNFRESH8 (its
# kernel lists say where cuDNN ran its lean reduction), then the folder tarred into one file.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/cudnn8
stamp() { echo "$(date +%s) $*" >> $OUT/cudnn8/steps.log; }
stamp start cudnnfresh8
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/cudnn8/gpu.txt 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" > $OUT/cudnn8/versions.txt 2>&1
timeout ${LIMIT:-100} python3 benchmarks/impl_validation_h200.py $OUT/cudnn8/h200-impl-cudnnfresh8.json ${BUDGET:-70} cudnnfresh8 sdpa-cudnn > $OUT/cudnn8/cudnnfresh8.log 2>&1
stamp end cudnnfresh8 rc=$?
tar -C $OUT -czf $OUT/cudnn8.tgz cudnn8
ls -la $OUT
