"""The Triton backward's H200 record (tests/data/backward-h200.json, made by
`bash benchmarks/backward_h200.sh OUT` on the lent H200, benchmarks/backward-h200/run.log)
against iosim's models, refitted here from the record: no GPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from iosim.calibrate import CalibrationError
from iosim.calibrate import backward_fit as F
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware

RECORD = Path(__file__).parent / "data" / "backward-h200.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return F.load_record(RECORD)


@pytest.fixture(scope="module")
def h200():  # type: ignore[no-untyped-def]
    return load_hardware(config_dir() / "h200.yaml")


def test_every_point_passed_its_check_and_beats_sdpa_at_long_d128_fp16(record: dict) -> None:
    """Issue 10's speed target: ≥ 1.0× SDPA's flash backward at N ≥ 4,096, d = 128, fp16."""
    for p in record["points"]:
        assert max(p["check_rel_error"].values()) < (2e-3 if p["dtype"] == "fp16" else 1e-2)
        assert max(p["agree_sdpa"].values()) < 2e-3
    target = [p for p in record["points"] if p["n"] >= 4096 and p["d"] == 128 and p["dtype"] == "fp16"]
    assert len(target) >= 20
    assert min(p["speed_ratio"] for p in target) >= 1.0


def test_dirty_share_is_its_fit_on_the_fit_points(record: dict, h200) -> None:  # type: ignore[no-untyped-def]
    assert F.fit_dirty_share(record, h200) == pytest.approx(F.DIRTY_SHARE, abs=0.005)


def test_dram_estimate_within_ten_percent_of_ncu_for_the_large_kernels(record: dict, h200) -> None:  # type: ignore[no-untyped-def]
    """Kernels of ≥ 50 MB of DRAM traffic: every isolated run but one (bf16 N = 16,384 dK/dV,
    −10.4 %) and all launch-order runs but three (GQA N = 16,384 dK/dV −19.5 %, N = 65,536 causal
    4 heads dK/dV −14.8 %, N = 8,192 4 heads dQ −15 %) within ±10 %; the misses are listed so
    that a change shows. Smaller kernels: all but 5 of 38 within ±10 %."""
    misses = []
    large = 0
    for p, how, rows in F.dram_comparison(record, h200):
        for k in rows:
            if k.measured >= 50e6:
                large += 1
                if abs(k.error) > 0.10:
                    misses.append((p["id"], how, k.kernel))
    assert large >= 160
    assert sorted(misses) == sorted([
        ("bf16/n16384/d128/b2h16kv16/full", "isolated", "bwd_dkdv"),
        ("fp16/n16384/d128/b1h32kv8/full", "launch order", "bwd_dkdv"),
        ("fp16/n65536/d128/b1h4kv4/causal", "launch order", "bwd_dkdv"),
        ("fp16/n8192/d128/b1h4kv4/full", "launch order", "bwd_dq"),
    ])
    small = [k for _, _, rows in F.dram_comparison(record, h200) for k in rows if k.measured < 50e6]
    assert len(small) >= 38 and sum(abs(k.error) > 0.10 for k in small) <= 5


def test_time_fit_and_its_hold_out(record: dict, h200) -> None:  # type: ignore[no-untyped-def]
    model = F.fit_time(record, h200)
    shipped = h200.measured.backward_schedule
    assert (model.efficiency, model.overhead_s) == pytest.approx(
        (shipped.efficiency, shipped.program_overhead_s))  # the YAML holds the fit
    assert shipped.causal_loops == F.CAUSAL_LOOPS == 2
    errors = {p["id"]: (F.predict_time(p, h200, model) - p["triton_s"]) / p["triton_s"]
              for p in record["points"]
              if p["n"] not in F.FIT_N and p["triton_s"] > F.LAUNCH_BOUND_S}
    assert len(errors) >= 35
    outside = sorted(i for i, e in errors.items() if abs(e) > 0.15)
    # the known miss: the longest d = 64 causal run (under, −17 %). Fitted with the
    # launch-visible point (N 1,024: 86 µs of host time) as the rule before bwd4 did, the
    # overhead came out at 14 µs and the short d = 64 runs missed by +27 % and +29 %.
    assert outside == ["fp16/n65536/d64/b1h16kv16/causal"]
    gpu = F.gpu_seconds(record)
    assert [p["id"] for p in record["points"] if p["n"] in F.FIT_N and F.launch_visible(p, gpu)
            and p["triton_s"] > F.LAUNCH_BOUND_S] == ["fp16/n1024/d128/b2h16kv16/full"]


def test_handover_moves_dirty_writes_to_the_next_kernel() -> None:
    """A kernel writing 30 of its 90 MB leaves 0.5 · 60 MB · 1/3 = 10 MB dirty for the next
    (and the last kernel gets the ncu protocol's own residue, dirty_ledger.PROTOCOL_RESIDUE_BYTES)."""
    from iosim.calibrate.dirty_ledger import PROTOCOL_RESIDUE_BYTES

    out = F.handover([("a", 60e6, 30e6), ("b", 20e6, 0.0)], 60e6, share=0.5)
    assert out == [("a", pytest.approx(80e6)),
                   ("b", pytest.approx(30e6 + PROTOCOL_RESIDUE_BYTES))]


def test_report_lists_every_point(record: dict, h200) -> None:  # type: ignore[no-untyped-def]
    text = F.report(record, h200)
    for p in record["points"]:
        assert p["id"] in text
    assert re.search(r"fused efficiency 0\.9\d", text)


def test_a_file_that_is_not_a_record_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"what": "else"}))
    with pytest.raises(CalibrationError, match="not a backward record"):
        F.load_record(bad)
    with pytest.raises(CalibrationError, match="cannot read"):
        F.load_record(tmp_path / "missing.json")
