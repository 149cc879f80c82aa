"""Where earlier points live, per family of fresh sets: the `Seen` sources a round's test hands
to tests/fresh_sets.py `assert_fresh`. Each family's sources are every point list and every
committed record of that family but the round's own, so a later set that repeated an earlier
one fails too. The one exception is named by the round (`later`): a set or record made after
the round *from its points* (a re-measurement, a probe of what it found), which is not earlier
than it."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from collections.abc import Hashable, Iterator
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import pytest

from tests.fresh_sets import Seen, seen

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

# --- decoding variants (calibrate/variants_points.py; records: tests/data/h200-variants.json)

VARIANT_KEYS = ("kind", "batch", "n_kv", "heads", "kv_heads", "d", "prefix_len", "suffix_lens")


def variant_shape(p: dict[str, Any]) -> tuple[Any, ...]:
    """A variants point as measured: its kind and every size of it."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in (p.get(k) for k in VARIANT_KEYS))


def variant_loose(p: dict[str, Any]) -> tuple[Any, ...]:
    """Batch, KV length (a shared prefix's full length), heads, KV heads: what any record row
    with a batch and a KV length says of a point, whatever else it records."""
    n_kv = p.get("n_kv") or (p.get("prefix_len") or 0) + max(p.get("suffix_lens") or [0])
    return tuple(int(float(v)) if v not in (None, "") else None
                 for v in (p.get("batch"), n_kv, p.get("heads"), p.get("kv_heads")))


def _dicts(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _dicts(v)
    elif isinstance(node, list):
        for v in node:
            yield from _dicts(v)


def recorded_rows(own: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Every point-like row (a batch and a KV length or prefix) of every JSON and CSV record
    under tests/data and benchmarks/, but the top-level JSON sections named `own`."""
    for path in sorted(DATA.rglob("*")) + sorted((ROOT / "benchmarks").rglob("*")):
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k not in own}
            rows: Any = _dicts(data)
        elif path.suffix == ".csv":
            rows = csv.DictReader(path.read_text().splitlines())
        else:
            continue
        for row in rows:
            if "batch" in row and ("n_kv" in row or "prefix_len" in row):
                yield row


def _loose_keys(rows: Iterator[dict[str, Any]]) -> Iterator[Hashable]:
    for row in rows:
        try:
            yield variant_loose(row)
        except (TypeError, ValueError):  # a row whose fields are not counts (a header, a note)
            continue


def variants_seen(points: Any, own_lists: tuple[str, ...],
                  own_sections: tuple[str, ...]) -> list[Seen]:
    """The other point lists of `points` (the variants_points module) by shape and loosely,
    every record row loosely (the round's own sections aside) and the shared-prefix probes
    (benchmarks/mla-prefill-h200, the points var6-var7 looked at) loosely."""
    listed = [p for name in dir(points) if name not in own_lists
              and isinstance(getattr(points, name), list)
              for p in getattr(points, name) if isinstance(p, dict) and "kind" in p]
    probes = [x["point"] for path in sorted((ROOT / "benchmarks/mla-prefill-h200").rglob(
        "prefix-*.json")) for x in json.loads(path.read_text())["spec"]]
    return [
        seen("the other point lists of calibrate/variants_points.py",
             map(variant_shape, listed), at_least=100),
        seen("the other point lists, by batch, KV length and heads",
             map(variant_loose, listed), key=variant_loose, at_least=100),
        seen("every JSON and CSV record under tests/data and benchmarks/",
             _loose_keys(recorded_rows(own_sections)), key=variant_loose, at_least=100),
        seen("the shared-prefix probes of benchmarks/mla-prefill-h200",
             map(variant_loose, probes), key=variant_loose),
    ]


# --- the backward (benchmarks/backward_h200.py grids; records tests/data/backward-h200*.json)

def backward_grids() -> list[str]:
    """Every grid of benchmarks/backward_h200.py: the calibration's two and every `fresh*_grid`
    (found by name, so that a new round's grid is an earlier source for the next at once)."""
    from benchmarks import backward_h200 as BH  # imports torch: the caller skips without it

    fresh = [name for name in dir(BH) if re.fullmatch(r"fresh\d*_grid", name)]
    assert len(fresh) >= 12, fresh
    return ["grid", "torch_grid", *fresh]


AXIS_FIELDS = {"d": "d", "mask": "causal", "dtype": "dtype", "N": "n"}
"""The axes every backward fresh set varies (issue 10's acceptance), by the point's field."""
AXES = {axis: attrgetter(field) for axis, field in AXIS_FIELDS.items()}
"""AXIS_FIELDS of a grid's BwdPoint."""
RECORD_AXES = {axis: itemgetter(field) for axis, field in AXIS_FIELDS.items()}
"""AXIS_FIELDS of a record's point (a dict)."""
ID = attrgetter("id")
"""A BwdPoint's key: its id, dtype/N/[N_kv/]d/batch·heads·kv/mask (the records' key too)."""


def grid_points(made: Any) -> list[Any]:
    """The BwdPoints of what a grid function returns, whatever its shape: a list of points, of
    (point, with eager, split) triples, or a tuple of such lists."""
    if hasattr(made, "id"):
        return [made]
    if isinstance(made, tuple) and made and hasattr(made[0], "id"):  # (point, eager, split)
        return [made[0]]
    return [p for part in made for p in grid_points(part)]


NEEDS_TORCH = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="needs torch: benchmarks/backward_h200.py's grids are BwdPoints of a module that "
           "imports it (.ci/run's torch step runs the test)")
"""The mark of every test that reads a backward grid (backward_grid, backward_seen): a mark, not
a skip raised here, so that the skip names the test's module (which .ci/run reruns with torch)."""


def backward_grid(name: str) -> list[Any]:
    from benchmarks import backward_h200 as BH  # imports torch: the caller skips without it

    made = getattr(BH, name)(False) if name == "grid" else getattr(BH, name)()
    return grid_points(made)


def backward_seen(own_record: str, own_grid: str, later: tuple[str, ...] = ()) -> list[Seen]:
    """Every point of every other backward record (points and ncu items, the bwd7 probe's too)
    and of every other grid, by id (dtype/N/[N_kv/]d/batch·heads·kv/mask); `later`: record
    file names made after the round from its points."""
    recorded: set[str] = set()
    for path in [*sorted(DATA.glob("backward-h200*.json")), DATA / "bwd7-probe-h200.json"]:
        if path.name == own_record or path.name in later:
            continue
        record = json.loads(path.read_text())
        if not isinstance(record, dict):  # backward-h200-resources.json: compiled kernels
            continue
        recorded |= {p["id"] for p in record.get("points", []) if "id" in p}
        recorded |= {i["id"] for i in record.get("counters", {}).get("items", [])}
    gridded = {p.id for name in backward_grids() if name != own_grid for p in backward_grid(name)}
    return [seen("every other backward record under tests/data", recorded, at_least=250),
            seen("every other grid of benchmarks/backward_h200.py", gridded, at_least=250)]


# --- forward implementations (benchmarks/impl_validation_h200.py; records h200-impl-*.json)


IMPL_AXES = {"d": attrgetter("d"), "dtype": attrgetter("dtype"), "N_kv": attrgetter("n_kv"),
             "batch": attrgetter("batch"), "GQA group": attrgetter("group_size")}
"""The axes of issue 11's acceptance every implementation fresh set varies, a Workload's."""
PREFILL_AXES = {**IMPL_AXES, "mask": attrgetter("causal")}
"""IMPL_AXES and the mask, for a set with prefills (a decode step's mask is moot)."""
FLEX8_PROBE = "flex8probe"
"""`later`'s name for round 8's flex probe (benchmarks/flex8_probe.py)."""


def impl_shape(w: Any) -> tuple[Any, ...]:
    """A Workload's shape with its dtype aside: batch, heads, KV heads, N, N_kv, d, mask."""
    return (w.batch, w.heads, w.kv_heads, w.n, w.n_kv, w.d, w.causal)


def impl_seen(own: str, later: tuple[str, ...] = ()) -> list[Seen]:
    """The calibration grid, every other set of the validation script, every other H200
    implementation record's workloads and round 8's flex probe; `own` is the set's name in
    the script's SETS (its record is tests/data/h200-impl-`own`.json), `later` the names of
    sets (and their records) made after it from its points, FLEX8_PROBE among them."""
    from benchmarks import flex8_probe as probe
    from benchmarks import impl_validation_h200 as V
    from iosim.calibrate.impl_run import FIT_GRID
    from iosim.inputs.workload import Workload

    assert {own, *later} <= {*V.SETS, FLEX8_PROBE}, f"{own} or {later}: not a set of the script"
    recorded = {Workload(**p["workload"]) for path in sorted(DATA.glob("h200-impl-*.json"))
                if path.stem.removeprefix("h200-impl-") not in (own, *later)
                for p in json.loads(path.read_text()).get("points", []) if "workload" in p}
    probed = {Workload(s["n"], d=s["d"], heads=s["heads"], kv_heads=s.get("kv_heads"),
                       causal=s.get("causal", False)) for _, s, _ in probe.PROBES}
    sources = [seen("the calibration grid (calibrate/impl_run.py FIT_GRID)", FIT_GRID),
               seen("every other set of benchmarks/impl_validation_h200.py",
                    (w for name, (points, _) in V.SETS.items() if name not in (own, *later)
                     for w in points), at_least=400),
               seen("every other H200 implementation record (tests/data/h200-impl-*.json)",
                    recorded, at_least=400)]
    if FLEX8_PROBE not in later:
        sources.append(seen("round 8's flex probe (benchmarks/flex8_probe.py)", probed))
    return sources
