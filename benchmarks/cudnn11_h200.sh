#!/bin/bash
# Issue 11, round cudnn11: the two fresh sets on the H200, one call after tag cudnn11-frozen.
# From the repo root:
#   OUT=/some/dir [BUDGET=45] [LIMIT=70] bash benchmarks/cudnn11_h200.sh
# CUDNNFRESH11 with sdpa-cudnn and sdpa-efficient, then EAGERFRESH11 with torch-naive
# (benchmarks/impl_validation_h200.py: each call checked against fp32, timed with do_bench,
# its kernels listed by torch.profiler), each stopped from starting points after BUDGET s and
# killed after LIMIT s; the folder tarred into one file.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NAME=cudnn11
mkdir -p $OUT/$NAME
stamp() { echo "$(date +%s) $*" >> $OUT/$NAME/steps.log; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/$NAME/gpu.txt 2>&1
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), triton.__version__)" > $OUT/$NAME/versions.txt 2>&1
for job in "cudnnfresh11 sdpa-cudnn,sdpa-efficient" "eagerfresh11 torch-naive"; do
  set -- $job
  stamp start $1
  timeout ${LIMIT:-70} python3 benchmarks/impl_validation_h200.py $OUT/$NAME/h200-impl-$1.json ${BUDGET:-45} $1 $2 > $OUT/$NAME/$1.log 2>&1
  stamp end $1 rc=$?
done
tar -C $OUT -czf $OUT/$NAME.tgz $NAME
ls -la $OUT
