"""bwd13's backward rules (calibrate/fresh12_bwd.py) and the twelfth fresh H200 set: the rules
against the records' kernel lists, the grid's new-ness (committed before the run), and (once the
record is in) the report as measured. No GPU."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iosim.calibrate import torch_bwd_dram as D  # noqa: E402
from iosim.inputs.gpus import config_dir  # noqa: E402
from iosim.inputs.hardware_yaml import load_hardware  # noqa: E402
from tests.fresh_sets import assert_fresh  # noqa: E402
from tests.seen_sets import AXES, ID, NEEDS_TORCH, backward_seen  # noqa: E402

L2_BYTES = 60 * 2**20
"""The H200's L2 (configs/gpus/h200.yaml)."""
FRESH12 = D.DATA / "backward-h200-fresh12.json"


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


def _ncu_runs(what: str) -> list[tuple[dict, list[str]]]:  # type: ignore[type-arg]
    """(point, kernel names in launch order) of every ncu run of `what` in the seen records
    (those before bwd13's: not the twelfth, nor the fourteenth or fifteenth, made later)."""
    runs = []
    for path in sorted(D.DATA.glob("backward-h200*.json")):
        if path in (FRESH12, D.DATA / "backward-h200-fresh14.json",
                    D.DATA / "backward-h200-fresh15.json"):
            continue
        record = json.loads(path.read_text())
        if not isinstance(record, dict) or record.get("counters", {}).get("status") != "ok":
            continue
        points = {p["id"]: p for p in record["points"]}
        for item in record["counters"]["items"]:
            if item["what"] == what and item["id"] in points:
                runs.append((points[item["id"]],
                             [k["kernel"] for k in item["segments"][0]["kernels"]]))
    return runs


def _layout(kernel: str) -> str:
    """A cuBLAS GEMM's operand layout from its name: cutlass '_nt_align2', nvjet '_NTN', xmma
    '_nt_n_'."""
    found = (re.search(r"_(nn|nt|tn|tt)_align", kernel) or re.search(r"_([NT]{2})[NT]\b", kernel)
             or re.search(r"_(nn|nt|tn|tt)_", kernel))
    assert found, kernel
    return found.group(1).lower()


def test_eager_launches_dk_before_dq() -> None:
    """The dk_first rule's evidence: in every eager run the third of the four GEMMs has dV's
    layout (an N×N operand transposed: dSᵀQ is dK) and the fourth the plain nn of dQ = dS K."""
    runs = _ncu_runs("eager")
    assert len(runs) >= 90
    for point, names in runs:
        gemms = [_layout(k) for k in names
                 if ("gemm" in k.lower() or "nvjet" in k) and "splitK" not in k]
        assert len(gemms) == 4, point["id"]
        assert gemms[2] == gemms[0] == "nt" and gemms[3] == "nn", (point["id"], gemms)


def test_sdpa_copies_only_with_more_than_one_head(h200) -> None:  # type: ignore[no-untyped-def]
    """Every seen SDPA run launches the two layout copies iff it has more than one head, and
    the model's kernel list has them iff so (the three one-head runs are fresh10's)."""
    from iosim.calibrate.backward_fit import workload_of

    runs = _ncu_runs("sdpa")
    assert sum(p["heads"] == 1 for p, _ in runs) == 3
    for point, names in runs:
        copies = sum("elementwise_kernel" in n for n in names)
        assert copies == (2 if point["heads"] > 1 else 0), point["id"]
        model = [k.name for k in D.model(workload_of(point), "sdpa", h200).kernels]
        assert ("bwd_copy_dO" in model) == ("bwd_copy_O" in model) == (point["heads"] > 1)


def test_the_rules_change_no_count(h200) -> None:  # type: ignore[no-untyped-def]
    """dk_first and the backward's reads of the GQA copies move no L2-oblivious byte: the
    eager kernels' oblivious bytes, by kernel name, are main's at a GQA point."""
    from iosim.calibrate import fresh12_bwd as F
    from iosim.inputs.workload import Workload

    w = Workload(batch=1, heads=8, kv_heads=2, n=2000, d=128, causal=True, pass_="bwd")
    after = D.model(w, "eager", h200)
    with F.rules_off():
        before = D.model(w, "eager", h200)
    assert [k.name for k in after.kernels][-3:] == ["bwd_dk", "bwd_dq", "bwd_sum_dkdv"]
    assert [k.name for k in before.kernels][-3:] == ["bwd_dq", "bwd_dk", "bwd_sum_dkdv"]
    assert {k.name: after.dram.of_kernel(k.name).oblivious_bytes for k in after.kernels} == {
        k.name: before.dram.of_kernel(k.name).oblivious_bytes for k in before.kernels}


def test_the_seen_group_sums(h200) -> None:  # type: ignore[no-untyped-def]
    """`python -m iosim.calibrate.fresh12_bwd` on the seen records: eager's GQA group sum 17 of
    20 within the bound with bwd13's rules, 2 of 20 with main's; its dP GEMM 81 of 92 (75);
    no eager GEMM family loses more than two rows (dK: 76 against 78)."""
    from iosim.calibrate import fresh12_bwd as F
    from iosim.calibrate import gemm_handover_fit as G

    records = F.comparable(D.load([p for p in F.SEEN if p.exists()]))
    after, before = F.rows_before_after(records, h200)

    def within(rows: list, kernel: str) -> int:  # type: ignore[type-arg]
        return sum(G.inside(r.estimate, r.measured) for r in rows
                   if r.what == "eager" and r.kernel == kernel)

    def positional(kernel: str) -> int:
        return sum(G.inside(b.estimate, b.measured) for a, b in zip(after, before, strict=True)
                   if a.what == "eager" and a.kernel == kernel)

    assert (within(after, "bwd_sum_dkdv"), within(before, "bwd_sum_dkdv")) == (17, 2)
    assert (within(after, "bwd_dp"), within(before, "bwd_dp")) == (81, 75)
    assert (within(after, "bwd_dk"), positional("bwd_dk")) == (76, 78)
    assert (within(after, "bwd_dq"), positional("bwd_dq")) == (78, 78)


def _grid() -> list:  # type: ignore[type-arg]
    pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
    from benchmarks import backward_h200 as BH

    return [p for p, _, _ in BH.fresh12_grid()]


@NEEDS_TORCH
def test_the_twelfth_grid_is_new() -> None:
    """No point equal (dtype, N, N_kv, d, batch·heads·kv, mask) to one of any earlier record
    (fresh1-11, the probes, the calibration records) or earlier grid (fresh8-11's included)."""
    points = _grid()
    assert_fresh(points, ID, backward_seen("backward-h200-fresh12.json", "fresh12_grid"),
                 size=(12, 16), axes=AXES)
    shapes = {(p.n, p.d, p.batch * p.heads, p.kv_heads * p.batch, p.causal) for p in points}
    assert len(shapes) == len(points)


def test_the_twelfth_grid_varies_every_axis() -> None:
    points = _grid()
    assert {p.d for p in points} == {64, 128}
    assert {p.group for p in points} >= {1, 2, 3, 4, 6, 8}
    assert sum(p.n % 8 != 0 for p in points) >= 10
    assert {p.batch for p in points if p.heads == 1} == {1, 2, 3}
    assert max(p.batch * p.heads for p in points) >= 16
    fill = [p.batch * p.heads * p.n * p.n * 2 / L2_BYTES for p in points]
    assert min(fill) < 0.6 and max(fill) > 4 and sum(f > 1 for f in fill) >= 8


@pytest.fixture(scope="module")
def record() -> dict:  # type: ignore[type-arg]
    if not FRESH12.exists():
        pytest.skip("the twelfth record is not in yet")
    return D.load([FRESH12])[0]


def test_the_record_is_the_grid(record: dict) -> None:  # type: ignore[type-arg]
    assert {p["id"] for p in record["points"]} == {p.id for p in _grid()}
    assert record["counters"]["status"] == "ok"


def test_as_measured_on_the_twelfth_set(record: dict, h200) -> None:  # type: ignore[no-untyped-def,type-arg]
    """Measured, held out (reports/backward-h200.md, twelfth set: `python3
    benchmarks/backward_h200.py $OUT/f12 --fresh12 --deadline-s 150` on the H200, bwd13's
    rules frozen at bwd13-frozen): eager's GQA group sum 10 of 10 within the bound (main's
    rules 0 of 10), dP 15 of 16 (11), dQ 14 (13), dK 14 (14), dV 16 (16); every eager kernel
    121 of 129 (106); SDPA's comparable rows unmoved; its three one-head runs (batch 1, 2, 3)
    launch 3 kernels, as the rule says, 7 of their 9 kernels within the bound."""
    from iosim.calibrate import fresh10_bwd as F10
    from iosim.calibrate import fresh12_bwd as F
    from iosim.calibrate import gemm_handover_fit as G

    kept, dropped = F10.matched(record)
    assert sorted(dropped) == ["bf16/n2600/d128/b3h1kv1/causal", "fp16/n3999/d64/b1h1kv1/full",
                               "fp16/n5500/d64/b2h1kv1/full"]
    after, before = F.rows_before_after([kept], h200)

    def within(rows: list, kernel: str) -> int:  # type: ignore[type-arg]
        return sum(G.inside(r.estimate, r.measured) for r in rows
                   if r.what == "eager" and r.kernel == kernel)

    def positional(kernel: str) -> int:
        return sum(G.inside(b.estimate, b.measured) for a, b in zip(after, before, strict=True)
                   if a.what == "eager" and a.kernel == kernel)

    assert (within(after, "bwd_sum_dkdv"), within(before, "bwd_sum_dkdv")) == (10, 0)
    assert (within(after, "bwd_dp"), positional("bwd_dp")) == (15, 11)
    assert (within(after, "bwd_dq"), positional("bwd_dq")) == (14, 13)
    assert (within(after, "bwd_dk"), positional("bwd_dk")) == (14, 14)
    assert (within(after, "bwd_dv"), positional("bwd_dv")) == (16, 16)
    eager = [(a, b) for a, b in zip(after, before, strict=True) if a.what == "eager"]
    assert len(eager) == 129
    assert sum(G.inside(a.estimate, a.measured) for a, _ in eager) == 121
    assert sum(G.inside(b.estimate, b.measured) for _, b in eager) == 106
    assert all(a.estimate == b.estimate for a, b in zip(after, before, strict=True)
               if a.what == "sdpa")
    one_head = [r for r in D.dram_comparison([record], h200)
                if r.what == "sdpa" and r.point in dropped]
    assert len(one_head) == 9 and sum(G.inside(r.estimate, r.measured) for r in one_head) == 7
