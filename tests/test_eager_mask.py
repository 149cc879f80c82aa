"""torch-naive's forward causal mask as it runs (analysis/eager_mask.py): `~keep` once per call,
masked_fill's clone of S, the fill on the copy reading the broadcast bool mask. Its counts three
ways (closed form = tile walk = the walk's arrays), its bytes against the NumPy executor's mask
pass, its launches against every H200 record, ncu's bytes of the two passes ncu sees; and the
fresh set EAGERFRESH9 (benchmarks/impl_validation_h200.py) new against every earlier point."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from iosim.algorithms import ALGORITHMS
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilestream import walk_arrays
from iosim.algorithms.tilewalk import walk
from iosim.analysis.compare import compare
from iosim.analysis.eager_mask import MASK_KERNELS, MASKED
from iosim.analysis.impl_kernels import impl_kernels, impl_workload
from iosim.calibrate.eager_kernel_fit import matched_times
from iosim.execute import execute, precision, random_inputs
from iosim.inputs.implementations_yaml import get_implementation
from iosim.inputs.workload import Workload
from tests.fresh_sets import as_is, assert_fresh
from tests.seen_sets import PREFILL_AXES, impl_seen

DATA = Path(__file__).parent / "data"
NAIVE = get_implementation("torch-naive")


def _kernels(w: Workload) -> tuple[Any, ...]:
    run = impl_workload(NAIVE, w)
    return impl_kernels(NAIVE, run, ALGORITHMS["standard"].forward(run))


def _per_term(w: Workload) -> dict[tuple[str, str, str], int]:
    return {(t.kernel, t.tensor, t.op): t.bytes
            for t in compare(w, "h200", impl="torch-naive").algorithms[-1].traffic.terms}


@pytest.mark.parametrize("w", [Workload(96, d=16, heads=3, kv_heads=1, batch=2, causal=True),
                               Workload(40, n_kv=72, d=8, heads=2, causal=True)])
def test_closed_form_tile_walk_and_arrays_agree(w: Workload) -> None:
    """Every term of the causal forward, `once` and broadcast accesses included, to the element."""
    kernels = _kernels(impl_workload(NAIVE, w))
    assert [k.name for k in kernels if k.name.startswith("mask")] == list(MASK_KERNELS)
    closed = {(t.kernel, t.tensor, t.op): t.elements for t in closed_form(kernels, w, None)}
    walked: Counter[tuple[str, str, str]] = Counter()
    for tile in walk(kernels, w, None):
        walked[(tile.kernel, tile.tensor, tile.op)] += tile.elements
    assert dict(walked) == closed
    arrays = walk_arrays(kernels, w, None)
    assert arrays.totals() == closed
    assert list(arrays.records()) == list(walk(kernels, w, None))


def test_the_added_terms_are_the_copy_and_the_two_mask_passes() -> None:
    """Against the NumPy executor's standard attention with the unfused scale and mask passes:
    every byte it moves is one of eager's (S_masked read as S), and eager's others are exactly
    ~keep (N·N_kv bytes read and written once), the clone (S read, S_masked written: the mask
    pass's own bytes again) and the fill's read of the bool mask (N·N_kv bytes per head)."""
    w = Workload(96, d=16, heads=2, batch=2, causal=True)
    run = w.with_(unfused=("scale", "mask"))
    ex = execute("standard", run, random_inputs(run, 0, precision("float64")),
                 dtype="float16", block_q=32, block_kv=32)
    executed = {k: n * ex.itemsize[k[1]] for k, n in ex.counts.items()}
    eager = _per_term(w)
    added = {"mask_not", "mask_copy"}
    renamed: Counter[tuple[str, str, str]] = Counter()
    for (kernel, tensor, op), nbytes in eager.items():
        if kernel in added or (kernel, tensor) == ("mask", "mask"):
            continue
        renamed[(kernel, "S" if tensor == MASKED else tensor, op)] += nbytes
    assert dict(renamed) == executed
    heads, scores = w.batch * w.heads, w.n * w.n_kv
    assert eager[("mask_not", "keep", "read")] == eager[("mask_not", "mask", "write")] == scores
    assert eager[("mask", "mask", "read")] == heads * scores
    assert eager[("mask_copy", "S", "read")] == eager[("mask_copy", MASKED, "write")] \
        == executed[("mask", "S", "read")] == heads * scores * w.element_bytes


def _records(skip: str = "") -> list[dict[str, Any]]:
    """Every timed torch-naive point of the records (but tests/data/`skip`)."""
    points = []
    for path in sorted(DATA.glob("h200-impl-*.json")):
        if path.name == skip:
            continue
        points += [p for p in json.loads(path.read_text())["points"]
                   if p.get("impl") == "torch-naive" and "time_s" in p]
    return points


def test_every_causal_forward_on_record_launches_the_three_mask_kernels() -> None:
    """Between the scale and the softmax: bitwise_not (~keep), Memcpy DtoD (masked_fill's
    clone), masked_fill_kernel (the fill), in that order (torch splits an op over more than
    2^31 elements into repeated launches); matched_times gives each its own time."""
    causal = [p for p in _records() if p["workload"].get("causal")]
    assert len(causal) >= 100
    for p in causal:
        roles = []
        for k in p["kernels"]:
            name = k["name"]
            role = ("mask_not" if "bitwise_not" in name else "mask_copy"
                    if name.startswith("Memcpy DtoD") else "mask" if "masked_fill" in name
                    else None)
            if role is not None and (not roles or roles[-1] != role):
                roles.append(role)
        assert roles == list(MASK_KERNELS), p["workload"]
        model = [k.name for k in _kernels(Workload(**p["workload"]))]
        assert set(MASK_KERNELS) <= set(matched_times(model, p["kernels"]))


def test_ncu_counts_keep_once_per_call_and_the_fill_reads_the_copy() -> None:
    """ncu on the H200 (tests/data/h200-impl-launches-rw.csv; benchmarks/impl_launches.py
    --evict): torch-naive, N 2,048, 8 query heads over 2 KV heads, causal. The bitwise_not kernel
    reads and writes the (N, N_kv) mask once for the call (4.2 MB, not 8 × 4.2); the fill reads
    at least S's bytes less what the L2 kept (S 67 MB, one head's stream past the 60 MiB L2) and
    writes S. The clone is a cudaMemcpy, not a kernel: ncu has no row for it (its bytes are
    the profiler's Memcpy DtoD time at the scale kernel's rate: memory_mask_copy 0.997 of the
    bandwidth against memory_scale's 0.996, both fitted on the launch times)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_implementations import _rw_launches

    w = Workload(2048, d=64, heads=8, kv_heads=2, causal=True)
    kernels = next(k for name, at, k, _ in _rw_launches() if name == "torch-naive" and at == w)
    keep = next(k for k in kernels if "bitwise_not" in k["name"])
    # the launch after it (the record keeps 80 characters of a name: "masked_fill" is cut off)
    fill = kernels[kernels.index(keep) + 1]
    assert fill["name"].startswith("void at::elementwise_kernel<128, 4")
    scores = w.n * w.n_kv
    assert keep["read"] == pytest.approx(scores, rel=0.05)
    assert keep["write"] == pytest.approx(scores, rel=0.05)
    s_bytes = w.heads * scores * w.element_bytes
    assert 0.9 * s_bytes <= fill["read"] <= s_bytes + scores
    assert fill["write"] == pytest.approx(s_bytes, rel=0.05)
    assert not any(k["name"].startswith("Memcpy") for k in kernels)
    dram = compare(w, "h200", impl="torch-naive", profile="measured").algorithms[-1].dram
    assert dram is not None
    predicted = {k: dram.of_kernel(k).bytes for k in ("mask_not", "mask")}
    assert predicted["mask_not"] == pytest.approx(keep["read"] + keep["write"], rel=0.05)
    assert predicted["mask"] == pytest.approx(fill["read"] + fill["write"], rel=0.10)


def test_the_fresh_eager9_set_is_new_and_varies_every_axis() -> None:
    """EAGERFRESH9 (eager9, measured after tag eager9-frozen) has no point of any earlier set of
    the script or of any recorded torch-naive point, and varies what the brief asks."""
    from benchmarks import impl_validation_h200 as V

    fresh = V.EAGERFRESH9
    assert_fresh(fresh, as_is, impl_seen("eagerfresh9"), size=(14, None), axes=PREFILL_AXES)
    unaligned = [w for w in fresh if w.n_kv % 8]
    assert {(w.d, w.n_kv % 2) for w in unaligned} >= {(64, 0), (64, 1), (128, 0), (128, 1)}
    assert len(fresh) - len(unaligned) >= 3 and sum(w.causal for w in fresh) >= 8
    assert any(not w.causal for w in unaligned)
    bh = [w.batch * w.heads for w in fresh]
    assert min(bh) == 1 and max(bh) == 64
    assert {w.group_size for w in fresh} >= {1, 3, 4, 8} and sum(w.n != w.n_kv for w in fresh) >= 2
    assert max(w.batch * w.heads * w.n * w.n_kv * w.element_bytes for w in fresh) > 60 * 2**20


def test_the_fill_runs_one_head_at_a_time_exactly_where_it_streams_fast() -> None:
    """estimates/eager_mask_fill.py's two classes against every causal record: the fill's bytes
    (S_masked read and written, the mask read) per second of its launches are 4.2-4.4 TB/s
    wherever torch's 32-bit pieces are single heads, and under 1.9 TB/s everywhere else, on the
    records the classes were made from. Not on h200-impl-eagerfresh11.json (round cudnn11,
    fresh): its N 1,300 six-head causal call (#2, S 20 MB, inside the L2) filled at 2.21 TB/s
    (reports/impl-validation/eager11.md)."""
    from iosim.estimates.eager_mask_fill import fill_is_contiguous

    rates: dict[bool, list[float]] = {True: [], False: []}
    for p in _records(skip="h200-impl-eagerfresh11.json"):
        w = Workload(**p["workload"])
        if not w.causal:
            continue
        fill_s = matched_times(list(MASK_KERNELS), p["kernels"])["mask"]
        scores = w.batch * w.heads * w.n * w.n_kv
        rates[fill_is_contiguous(w)].append(scores * (2 * w.element_bytes + 1) / fill_s)
    assert len(rates[True]) >= 19 and len(rates[False]) >= 91
    assert min(rates[True]) > 4.2e12 and max(rates[True]) < 4.4e12
    assert max(rates[False]) < 1.9e12


def test_ncu_on_the_fresh_set_counts_keep_once_and_the_kernels_as_estimated() -> None:
    """tests/data/h200-impl-eagerdram9.csv (benchmarks/eager9_h200.sh, ncu over EAGERFRESH9's calls,
    evicts around each): at every causal call ~keep moves N·N_kv bytes in and out once (within
    7 % or 2 MB), and the call's counted kernels are within 5 % of the DRAM estimate without the clone
    (a cudaMemcpy ncu does not count) at 16 of the 17 calls (reports/impl-validation/eager9.md)."""
    from benchmarks.eager8_judge import dram_rows

    found = dram_rows(DATA / "h200-impl-eagerdram9.csv", "eagerfresh9")
    assert len(found) == 17
    keeps = [r["own"]["mask_not"] for r in found if "mask_not" in r["own"]]
    assert len(keeps) == 13
    # within 7 % or 2 MB of once per call at every causal call (8 heads would be 8x that)
    assert all(abs(counted - predicted) <= max(0.07 * predicted, 2e6)
               for counted, predicted in keeps)
    errors = [abs(r["predicted"] / r["counted"] - 1) for r in found]
    assert sum(e <= 0.05 for e in errors) == 16
