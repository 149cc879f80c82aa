"""sdpa-cudnn's lean (stream-K) decode split (analysis/stream_k.py) against the kernel lists
torch.profiler recorded on the H200, and its counts against the executor."""

from __future__ import annotations

import json
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.verify import verify
from iosim.inputs.workload import Workload
from tests.conftest import DATA
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import IMPL_AXES, impl_seen

SEEN = ("fit", "fit2", "calibrate", "validation", "validation2", "validation3", "validation4",
        "validation5", "validation6")
"""The records of benchmarks/impl_validation_h200.py and `iosim calibrate --impl` on the H200
(tests/data/h200-impl-NAME.json; each point's `kernels` is torch.profiler's list of one call)."""
LEAN = "lean_reduction_kernel"
"""What cuDNN's reduction kernel's name contains (cudnn::fusion::lean_reduction_kernel<...>)."""


def _decode_points(names: tuple[str, ...] = SEEN) -> list[dict[str, Any]]:
    points = []
    for name in names:
        record = json.loads((DATA / f"h200-impl-{name}.json").read_text())
        points += [p for p in record["points"] if p.get("impl") == "sdpa-cudnn"
                   and p["workload"]["n"] == 1 and p.get("kernels")]
    return points


JUDGED = ("cudnnfresh8",)
"""The fresh set the rule was judged on after tag cudnn8-frozen (six of its decode steps at
batch × KV heads 66-78): seen now, and read here for its kernel lists only."""


def test_the_lean_split_runs_exactly_where_cudnn_launched_its_reduction() -> None:
    """Every recorded cuDNN decode step: iosim takes the split path (two kernels) where the
    call's kernels included lean_reduction_kernel and the fused kernel alone where they did
    not, with as many kernels as were recorded. The fit records bracketed the switch between
    batch × KV heads 64 and 80, and the rule (⌊132 SMs / programs⌋ ≥ 2) put it after 66;
    cudnnfresh8, measured after the freeze, ran lean at 66 and not at 68."""
    points = _decode_points((*SEEN, *JUDGED))
    sides: dict[bool, list[int]] = {True: [], False: []}
    for p in points:
        w = Workload(**p["workload"])
        est = compare(w, "h200", impl="sdpa-cudnn", profile="spec").algorithms[-1]
        lean = any(LEAN in k["name"] for k in p["kernels"])
        assert (est.algorithm == "splitkv") == lean, (p["workload"], est.algorithm)
        assert len(est.kernels) == len(p["kernels"]), (p["workload"], len(est.kernels))
        sides[lean].append(w.batch * w.kv_heads)
    assert len(points) >= 80
    assert max(sides[True]) == 66 and min(sides[False]) == 68


def test_a_prefill_and_a_gpu_without_an_sm_count_do_not_split() -> None:
    """The rule is the decode step's (every recorded lean call had n = 1), and needs the SM
    count: a short prefill of few programs and the same step on a GPU YAML without sm_count run
    cuDNN's fused kernel alone."""
    prefill = Workload(64, n_kv=4096, heads=8, d=128)
    assert compare(prefill, "h200", impl="sdpa-cudnn").algorithms[-1].algorithm == "flash2"
    step = Workload(1, n_kv=65536, heads=8, d=128)
    assert compare(step, "h200", impl="sdpa-cudnn").algorithms[-1].algorithm == "splitkv"
    from iosim.inputs.gpus import resolve_hardware
    from iosim.record import replace

    bare = replace(resolve_hardware("h200").hardware, sm_count=None)
    assert compare(step, bare, impl="sdpa-cudnn").algorithms[-1].algorithm == "flash2"


@pytest.mark.parametrize("shape", [
    Workload(1, n_kv=3000, heads=12, kv_heads=3, d=64),  # 24 splits of one key block each
    Workload(1, n_kv=1000, heads=4, kv_heads=4, d=32, batch=2),  # MHA, a short last split
])
def test_the_lean_split_counts_equal_the_executors(shape: Workload) -> None:
    """The split count the rule chose, at its tiles: closed form = tile walk = executor
    (iosim verify), term by term."""
    est = compare(shape, "h200", impl="sdpa-cudnn", profile="spec").algorithms[-1]
    assert est.algorithm == "splitkv" and est.tiling is not None
    splits = est.tiling.splits
    assert splits >= 2
    v = verify(shape, algorithms=["splitkv"], block_q=est.tiling.block_q,
               block_kv=est.tiling.block_kv, splits=splits)
    assert v.ok
    counted = next(a for a in v.algorithms if a.name == "splitkv")
    assert counted.splits == splits and counted.terms
    assert all(t.closed_form == t.walk == t.executor for t in counted.terms)


def test_the_fresh_cudnn_set_is_new_and_pins_the_switch() -> None:
    """benchmarks/impl_validation_h200.py's CUDNNFRESH8 (cudnn8, measured after tag
    cudnn8-frozen): no point equals one of any other set of the script or of any committed
    H200 implementation record; decode steps at batch × KV heads 2 ... 128 with five in the
    seen records' gap (66 ... 78), MQA, GQA and MHA, N_kv 3k-128k not a power of two, d 64 /
    128 / 256, fp16 and bf16, batch 1-32; and short prefills."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.CUDNNFRESH8
    assert_fresh(fresh, as_is, impl_seen("cudnnfresh8"), size=(14, None), axes=IMPL_AXES)
    decode = [w for w in fresh if w.n == 1]
    bk = sorted(w.batch * w.kv_heads for w in decode)
    assert bk[0] == 2 and bk[-1] == 128 and sum(66 <= b <= 78 for b in bk) >= 5
    assert {1, 4, 8, 32} <= {w.group_size for w in decode}
    assert all(3000 <= w.n_kv <= 131072 and w.n_kv & (w.n_kv - 1) for w in decode)
    assert {w.d for w in decode} == {64, 128, 256} and {w.dtype for w in decode} == {"fp16",
                                                                                    "bf16"}
    assert min(w.batch for w in decode) == 1 and max(w.batch for w in decode) == 32
    assert 2 <= sum(16 <= w.n <= 128 for w in fresh) <= 3


def test_the_shipped_lean_reduction_figures_are_the_fit_of_its_measured_times() -> None:
    """sdpa-cudnn's combine_* terms (estimates/combine.py's model for its lean_reduction_kernel)
    are calibrate/combine_fit.py's fit of that kernel's torch.profiler device times in every
    seen record's lean decode steps (duplicates of one shape in two records both count)."""
    from iosim.calibrate.combine_fit import combine_points, fit_combine
    from iosim.calibrate.impl_fit import merged_records
    from iosim.estimates.combine import TERMS
    from iosim.inputs.gpus import resolve_hardware

    h200 = resolve_hardware("h200").hardware
    names = (*SEEN, "flex5")
    record = merged_records([DATA / f"h200-impl-{s}.json" for s in names])
    data = combine_points(record["points"], h200, "sdpa-cudnn")
    assert len(data) == sum(any(LEAN in k["name"] for k in p["kernels"])
                            for p in _decode_points())
    assert h200.measured is not None
    shipped = h200.measured.impls["sdpa-cudnn"].terms
    assert fit_combine(data, h200) == pytest.approx({k: shipped[k] for k in TERMS}, rel=1e-3)
