"""Issue 14 (fp8wire): the per-mask FP8 matmul rate var9 froze (tag var9-fp8-frozen) and judged
on fp8_fresh3 is the shipped model: compare and the sweep time a causal FP8 kernel at
measured.peak_flops.fp8_causal and a non-causal one at measured.peak_flops.fp8.

The reference numbers are benchmarks/fp8_mask_fit.py's: its rates refitted from the record
(tests/data/h200-variants.json, measured on an NVIDIA H200; reports/variants-h200.md "Issue 14,
var9") and its predictions, (matmul FLOPs / rate + elementwise s) / (efficiency · utilisation),
built from the profile's terms, never from compare's time."""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

import iosim
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.errors import ConfigError
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware_yaml import load_hardware
from iosim.output.render import comparison_json
from iosim.record import replace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import fp8_mask_fit as fit  # noqa: E402
import variants_compare as vc  # noqa: E402


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "tests/data/h200-variants.json").read_text())
    return data


def test_compare_times_fp8_at_the_frozen_per_mask_rates(record: dict[str, Any]) -> None:
    """Every seen FP8 point (32) and every fp8_fresh3 point (8): compare's time is the script's
    prediction at the rates it fits on the seen sections (1,030 / 865 TFLOP/s, var9's report)."""
    rates = fit.fit(fit.rows_of(record, fit.SEEN))
    assert (rates[False], rates[True]) == (1030e12, 865e12)
    rows = fit.rows_of(record, fit.SEEN) + fit.rows_of(record, fit.FRESH)
    assert len(rows) == 40 and {r["causal"] for r in rows} == {False, True}
    points = {p["id"]: p for s in (*fit.SEEN, *fit.FRESH) for p in record[s]}
    for r in rows:
        c = iosim.compare(vc.workload(points[r["id"]]), vc.GPU, algorithms=["flash2"],
                          profile="measured", **vc.FP8_TILES)
        assert c.roofs.matmul_flops_per_s == rates[r["causal"]], r["id"]
        time = c.algorithm("flash2").kernels[0].time_s
        assert math.isclose(time, fit.predict(r, rates[r["causal"]]), rel_tol=1e-9), r["id"]


def _without_causal_rate() -> iosim.Hardware:
    hw = resolve_hardware("h200").hardware
    assert hw.measured is not None and hw.measured.fp8_causal_flops_per_s == 865e12
    return replace(hw, measured=replace(
        hw.measured, fp8_causal_flops_per_s=None))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("pass_", ["fwd", "fwdbwd"])
def test_non_fp8_estimates_do_not_see_the_causal_rate(dtype: str, pass_: str) -> None:
    """A causal fp16/bf16 comparison is the same JSON with or without fp8_causal."""
    w = iosim.Workload(3000, d=128, heads=8, batch=2, dtype=dtype, causal=True, pass_=pass_)
    with_rate = comparison_json(iosim.compare(w, "h200", profile="measured"))
    without = comparison_json(iosim.compare(w, _without_causal_rate(), profile="measured"))
    assert with_rate == without and '"time_s"' in with_rate


def test_non_causal_fp8_does_not_see_the_causal_rate() -> None:
    w = iosim.Workload(3000, d=128, heads=8, batch=2, dtype="fp8_e4m3")
    a = iosim.compare(w, "h200", profile="measured").algorithm("flash2").time_s
    b = iosim.compare(w, _without_causal_rate(), profile="measured").algorithm("flash2").time_s
    causal = iosim.compare(replace(w, causal=True), "h200", profile="measured")
    assert a == b and causal.roofs.matmul_flops_per_s == 865e12


@pytest.mark.parametrize("profile", ["spec", "measured"])
def test_a_sweep_over_both_masks_and_dtypes_equals_compare(profile: str) -> None:
    """The vectorised grid's roofs carry the mask axis: each point of a causal × dtype sweep
    (more than one value on each) equals its own compare."""
    masks, dtypes = (False, True), ("fp16", "fp8_e4m3", "fp8_e5m2")
    s = sweep(SweepSpec(n=(1000, 4096), gpu=("h200",), d=(128,), heads=(8,), batch=(2,),
                        dtype=dtypes, causal=masks, profile=profile))
    for flat, (dtype, causal, n) in enumerate(itertools.product(dtypes, masks, (1000, 4096))):
        c = iosim.compare(iosim.Workload(n, d=128, heads=8, batch=2, dtype=dtype, causal=causal),
                          "h200", profile=profile)
        for grid in s.algorithms:
            assert math.isclose(float(grid.time_s.flat[flat]), c.algorithm(grid.name).time_s,
                                rel_tol=1e-12), (dtype, causal, n, grid.name)


GOOD = """schema_version: 1
name: g
peak_flops: {fp16: {value: 100 TFLOP/s, source: s}, fp8: {value: 200 TFLOP/s, source: s}}
hbm_bandwidth: {value: 1000 GB/s, source: s}
hbm_capacity: {value: 10 GB, source: s}
sram_per_block: {value: 100 KiB, source: s}
measured:
  provenance: p
  peak_flops:
"""


@pytest.mark.parametrize(("peaks", "says"), [
    ("    fp8_causal: {value: 90 TFLOP/s, source: s}\n", "needs measured.peak_flops.fp8"),
    ("    fp8: {value: 100 TFLOP/s, source: s}\n    fp8_causal: {value: 120 TFLOP/s, source: s}\n",
     "must be from 0.5× to 1×"),
    ("    fp8: {value: 100 TFLOP/s, source: s}\n    fp8_causal: {value: 40 TFLOP/s, source: s}\n",
     "must be from 0.5× to 1×"),
    ("    fp8: {value: 100 TFLOP/s, source: s}\n    fp8_causal: {value: -1 TFLOP/s, source: s}\n",
     "is not a quantity"),
    ("    fp8_causl: {value: 90 TFLOP/s, source: s}\n", "unknown dtype"),
])
def test_a_bad_causal_rate_is_one_line(tmp_path: Path, peaks: str, says: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(GOOD + peaks)
    with pytest.raises(ConfigError) as err:
        load_hardware(str(path))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_good_causal_rate_loads(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(GOOD + "    fp8: {value: 100 TFLOP/s, source: s}\n"
                           "    fp8_causal: {value: 84 TFLOP/s, source: s}\n")
    hw = load_hardware(str(path))
    assert hw.measured is not None and hw.measured.fp8_causal_flops_per_s == 84e12
    assert set(hw.measured.peak_flops_per_s) == {"fp8"}
