"""bwd14's split-K rule (calibrate/split_k.py) and the fourteenth fresh H200 set: the rule
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

from iosim.calibrate import split_k  # noqa: E402
from iosim.calibrate import torch_bwd_dram as D  # noqa: E402
from iosim.inputs.gpus import config_dir  # noqa: E402
from iosim.inputs.hardware_yaml import load_hardware  # noqa: E402
from tests.fresh_sets import assert_fresh, loosened  # noqa: E402
from tests.seen_sets import AXES, ID, NEEDS_TORCH, backward_seen  # noqa: E402

FRESH14 = D.DATA / "backward-h200-fresh14.json"
SEEN_SPLIT = (D.FRESH10, D.FRESH12)
"""The records whose one-head eager runs the rule was read from."""


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


def _eager_runs() -> list[tuple[dict, list[str]]]:  # type: ignore[type-arg]
    """(point, kernel names in launch order) of every seen eager ncu run."""
    runs = []
    for path in sorted(D.DATA.glob("backward-h200*.json")):
        if path in (FRESH14, D.DATA / "backward-h200-fresh15.json"):  # made later
            continue
        record = json.loads(path.read_text())
        if not isinstance(record, dict) or record.get("counters", {}).get("status") != "ok":
            continue
        points = {p["id"]: p for p in record["points"]}
        for item in record["counters"]["items"]:
            if item["what"] == "eager" and item["id"] in points:
                runs.append((points[item["id"]],
                             [k["kernel"] for k in item["segments"][0]["kernels"]]))
    return runs


def test_split_k_exactly_at_one_gemm_batch() -> None:
    """Every seen eager run at batch·heads 1 launches three split-K reduces (dV, dK, dQ), none
    at batch·heads ≥ 2: the rule's condition, read off the ncu kernel names."""
    runs = _eager_runs()
    one = [names for p, names in runs if p["batch"] * p["heads"] == 1]
    more = [names for p, names in runs if p["batch"] * p["heads"] > 1]
    assert len(one) == 4 and len(more) >= 90
    assert all(sum("splitKreduce_kernel" in n for n in names) == 3 for names in one)
    assert not any("splitKreduce_kernel" in n for names in more for n in names)


def test_the_split_rows_are_the_seen_reduces() -> None:
    """SPLIT_K_ROWS is the seen dV and dQ reduces' median S·N (read off their L2 bytes), rounded
    to the thousand; each of the 8 within 5 % of it."""
    records = D.load(list(SEEN_SPLIT))
    seen = split_k.seen_split_rows(records)
    assert len(seen) == 12 and [layout for _, layout, _ in seen[:3]] == ["nt", "nt", "nn"]
    assert round(split_k.fitted_rows(records), -3) == split_k.SPLIT_K_ROWS
    dv_dq = [v for i, (_, _, v) in enumerate(seen) if i % 3 != 1]
    assert all(abs(v / split_k.SPLIT_K_ROWS - 1) < 0.05 for v in dv_dq)


def test_partials_only_for_the_reducing_gemms(h200) -> None:  # type: ignore[no-untyped-def]
    """At one head the dV, dK, dQ GEMMs write S·M·d·4 bytes of partials (S = SPLIT_K_ROWS / N:
    4 at N 5,750), dP and the elementwise kernels none; at two heads, or where S < 2, none."""
    from iosim.calibrate.backward_fit import workload_of

    def partials(n: int, heads: int) -> dict[str, float]:
        p = {"n": n, "d": 64, "heads": heads, "kv_heads": heads, "batch": 1, "causal": False,
             "dtype": "fp16"}
        w = workload_of(p)
        a = D.model(w, "eager", h200)
        return {k.name: split_k.partial_bytes(k, w) for k in D.launched(w, "eager", a)}

    from iosim.calibrate.fresh14_bwd import rule_on

    assert not any(partials(5750, 1).values())  # opt-in: off as shipped
    with rule_on():
        one, two, long = partials(5750, 1), partials(5750, 2), partials(12000, 1)
    assert {k for k, v in one.items() if v} == {"bwd_dv", "bwd_dk", "bwd_dq"}
    assert one["bwd_dv"] == 4 * 5750 * 64 * 4
    assert not any(two.values()) and not any(long.values())


def _grid() -> list:  # type: ignore[type-arg]
    pytest.importorskip("torch")  # the grid's BwdPoint lives in a module that imports torch
    from benchmarks import backward_h200 as BH

    return [p for p, _, _ in BH.fresh14_grid()]


def _shape(point_id: str) -> tuple[int, int, int, int, bool] | None:
    """(N, d, batch·heads, batch·kv heads, causal) of an id, dtype aside; None for N_kv ≠ N."""
    m = re.fullmatch(r"\w+/n(\d+)/d(\d+)/b(\d+)h(\d+)kv(\d+)/(\w+)", point_id)
    if m is None:
        return None
    n, d, b, h, kv = (int(g) for g in m.groups()[:5])
    return n, d, b * h, b * kv, m.group(6) == "causal"


@NEEDS_TORCH
def test_the_fourteenth_grid_is_new() -> None:
    """No point's id that of a point of any earlier record (fresh1-12, the probes, the
    calibration records) or other grid, nor its shape (N, d, batch·heads, batch·kv, mask: dtype
    aside) (tests/fresh_sets.py assert_fresh)."""
    points = _grid()
    earlier = backward_seen("backward-h200-fresh14.json", "fresh14_grid")
    assert_fresh(points, ID, [*earlier, *loosened(earlier, _shape, lambda p: _shape(p.id))],
                 size=(14, 16), axes=AXES)


def test_the_fourteenth_grid_varies_every_axis() -> None:
    points = _grid()
    assert {p.d for p in points} == {64, 128}
    assert {p.causal for p in points} == {True, False}
    assert {p.dtype for p in points} == {"fp16", "bf16"}
    assert {p.group for p in points} >= {1, 3, 4, 6}
    assert all(p.n & (p.n - 1) for p in points) and sum(p.n % 8 != 0 for p in points) >= 8
    one = [p for p in points if p.batch * p.heads == 1]
    assert len(one) >= 6 and {p.causal for p in one} == {True, False}
    assert {p.d for p in one} == {64, 128} and {p.dtype for p in one} == {"fp16", "bf16"}
    assert any(split_k.SPLIT_K_ROWS / p.n < 2 for p in one)
    assert any(p.heads == 1 and p.batch > 1 for p in points)
    assert min(p.batch * p.heads for p in points) == 1
    assert max(p.batch * p.heads for p in points) > 132


@pytest.fixture(scope="module")
def record() -> dict:  # type: ignore[type-arg]
    if not FRESH14.exists():
        pytest.skip("the fourteenth record is not in yet")
    return D.load([FRESH14])[0]


def test_the_record_is_the_grid(record: dict) -> None:  # type: ignore[type-arg]
    assert {p["id"] for p in record["points"]} == {p.id for p in _grid()}
    assert record["counters"]["status"] == "ok"


def test_as_measured_on_the_fourteenth_set(record: dict, h200) -> None:  # type: ignore[no-untyped-def,type-arg]
    """Measured, held out (reports/backward-h200.md, bwd14: `python3 benchmarks/backward_h200.py
    $OUT/f14 --fresh14 --deadline-s 150` on the H200, the rule frozen at bwd14-frozen): every
    kernel row 152 of 189 within the bound with the rule, 151 without; one-head eager kernels 32
    of 52 against 31; the whole eager backward of bf16 N 1,300 +82 % with it (−6.5 % without).
    The condition held (split-K reduces at every batch·heads-1 run, none above), the split
    count did not: S·N 10,000-123,000, and two reduces at N 12,500 where the rule has none."""
    from iosim.calibrate import fresh14_bwd as F

    after, before = F.before_after([record], h200)
    assert (F.within(after), F.within(before), len(after)) == (152, 151, 189)
    one_a, one_b = F.one_head(after, [record]), F.one_head(before, [record])
    assert (F.within(one_a), F.within(one_b), len(one_a)) == (32, 31, 52)
    whole = {what: [sum(r.estimate for r in rows if r.point == "bf16/n1300/d64/b1h1kv1/full"
                        and r.what == "eager")
                    / sum(r.measured for r in rows if r.point == "bf16/n1300/d64/b1h1kv1/full"
                          and r.what == "eager") - 1]
             for what, rows in (("after", after), ("before", before))}
    assert round(whole["after"][0], 3) == 0.820 and round(whole["before"][0], 3) == -0.065
    assert all(a.estimate == b.estimate for a, b in zip(after, before, strict=True)
               if a.what == "sdpa" or a.point not in {r.point for r in one_a})
    seen = split_k.seen_split_rows([record])
    assert len(seen) == 20 and sum(p == "bf16/n12500/d128/b1h1kv1/full" for p, _, _ in seen) == 2
    assert round(min(v for *_, v in seen), -3) == 10_000 and round(max(v for *_, v in seen), -3) == 123_000


def test_the_seen_one_head_runs(h200) -> None:  # type: ignore[no-untyped-def]
    """`python -m iosim.calibrate.fresh14_bwd` on the seen records (reports/backward-h200.md,
    bwd14): the four one-head eager runs' kernels 22 of 29 within the bound with the rule, 17
    without; every seen eager kernel 770 of 829 against 765; the rule off as shipped."""
    from iosim.calibrate import fresh14_bwd as F

    records = D.load([p for p in F.SEEN if p.exists()])
    after, before = F.before_after(records, h200)
    one_a, one_b = F.one_head(after, records), F.one_head(before, records)
    assert (F.within(one_a), F.within(one_b), len(one_a)) == (22, 17, 29)
    eager = [(a, b) for a, b in zip(after, before, strict=True) if a.what == "eager"]
    assert len(eager) == 829
    assert (F.within([a for a, _ in eager]), F.within([b for _, b in eager])) == (770, 765)
    assert D.dram_comparison(records, h200) == before
