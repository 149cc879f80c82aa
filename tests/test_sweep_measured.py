"""Sweeps and reports with the measured profile and with `--impl` (issue 11 item 4): a one-point
sweep is compare's estimate (the measured profile's per-point DRAM estimate, sweep_measured.py;
an implementation's compare per point, sweep_impl.py), and the refusals are one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run

CASES = [
    Workload(4096, d=128, heads=16, batch=2),
    Workload(1, n_kv=32768, d=128, heads=32, kv_heads=8),  # decode: sdpa-flash's split kernel
    Workload(2048, d=64, heads=8, causal=True, pass_="bwd"),
    Workload(1000, n_kv=3000, d=128, heads=4, kv_heads=2, causal=True),
]


def _spec(w: Workload, **options: object) -> SweepSpec:
    return SweepSpec(n=(w.n,), gpu=("h200",), n_kv=(w.n_kv,), d=(w.d,), heads=(w.heads,),
                     kv_heads=(w.kv_heads,), batch=(w.batch,), causal=(w.causal,),
                     pass_=(w.pass_,), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("w", CASES)
@pytest.mark.parametrize("profile", ["spec", "measured"])
def test_a_one_point_impl_sweep_is_compare(w: Workload, profile: str) -> None:
    c = compare(w, "h200", impl="sdpa-flash", profile=profile)  # type: ignore[arg-type]
    s = sweep(_spec(w, impl="sdpa-flash", profile=profile))
    assert [g.name for g in s.algorithms] == ["standard", "sdpa-flash"]
    for grid, a in zip(s.algorithms, c.algorithms, strict=True):
        assert int(grid.hbm_bytes[0]) == a.hbm_bytes
        assert math.isclose(float(grid.time_s[0]), a.time_s, rel_tol=1e-12)
        if a.tiling is not None:
            assert (int(grid.block_q[0]), int(grid.splits[0])) == (a.tiling.block_q,
                                                                   a.tiling.splits)


def test_an_impl_sweep_varies_like_compare() -> None:
    """Over N (prefill and decode): the split kernel where FA2's rule picks it, as compare."""
    s = sweep(SweepSpec(n=(1, 512, 4096), n_kv=(8192,), gpu=("h200",), d=(128,), heads=(32,),
                        kv_heads=(8,), impl="torch-naive", profile="measured"))
    for i, n in enumerate((1, 512, 4096)):
        c = compare(Workload(n, n_kv=8192, d=128, heads=32, kv_heads=8), "h200",
                    impl="torch-naive", profile="measured")
        assert math.isclose(float(s.algorithm("torch-naive").time_s[i]),
                            c.algorithms[1].time_s, rel_tol=1e-12)


def test_the_cli_sweeps_the_measured_profile_and_an_impl() -> None:
    code, out, err = run("sweep", "--gpu", "h200", "--n", "1024,4096", "--profile", "measured",
                         "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    c = compare(Workload(4096), "h200", profile="measured")
    row = next(r for r in rows if r["n"] == 4096 and r["algorithm"] == "flash2")
    assert math.isclose(row["time_s"], c.algorithm("flash2").time_s, rel_tol=1e-9)
    code, out, err = run("sweep", "--gpu", "h200", "--n", "1,4096", "--n-kv", "8192", "--heads",
                         "32", "--kv-heads", "8", "--d", "128", "--impl", "sdpa-flash",
                         "--profile", "measured")
    assert code == 0, err
    assert "blocks from sdpa-flash's tile table" in out and "sdpa-flash  64×128" in out


@pytest.mark.parametrize(("extra", "message"), [
    (["--impl", "sdpa-flash", "--algo", "flash2"], "Error: --impl picks the algorithm"),
    (["--impl", "nope"], "Error: unknown implementation 'nope'"),
    (["--impl", "sdpa-flash", "--splits", "4"], "Error: --impl decides the split count"),
    (["--impl", "sdpa-flash", "--block-q", "2048", "--block-kv", "2048"],
     "Error: at --d 64, --n 1024, --block-q 2048, --block-kv 2048: blocks B_r = 2048, "
     "B_c = 2048 do not fit"),
    (["--profile", "measured", "--gpu", "a100"], "Error: a100-80gb-sxm has no measured section"),
    (["--impl", "sdpa-flash", "--profile", "measured", "--gpu", "a100"],
     "Error: a100-80gb-sxm has no measured section"),
])
def test_bad_sweeps_are_one_line(extra: list[str], message: str) -> None:
    args = ["sweep", "--n", "1024", *extra]
    if "--gpu" not in extra:
        args += ["--gpu", "h200"]
    code, _, err = run(*args)
    assert code == 2 and err.startswith(message) and err.count("\n") == 1, err


def test_a_report_of_an_impl_with_the_measured_profile(tmp_path: Path) -> None:
    """It used to stop at its first sweep (`unknown algorithm 'sdpa-flash'`), and the measured
    profile was refused: now both, the GPUs compared being those with a measured section."""
    folder = tmp_path / "r"
    code, _, err = run("report", "--gpu", "h200", "--out", str(folder), "--impl",
                         "sdpa-flash", "--profile", "measured", "--n-range", "512,2048",
                         "--n", "1024", "--heads", "4", "--batch", "2")
    assert code == 0, err
    summary = json.loads((folder / "summary.json").read_text())
    c = compare(Workload(1024, heads=4, batch=2), "h200", impl="sdpa-flash", profile="measured")
    assert "sdpa-flash" in (folder / "traffic_vs_n.csv").read_text()
    assert summary["command"].count("--impl sdpa-flash") == 1
    assert c.algorithms[1].name == "sdpa-flash"


@pytest.mark.parametrize(("extra", "message"), [
    (["--impl", "nope"], "Error: unknown implementation 'nope'"),
    (["--profile", "measured", "--gpu", "a100"], "Error: a100-80gb-sxm has no measured section"),
    (["--profile", "measured", "--compare-gpus", "a100"],
     "Error: a100-80gb-sxm has no measured section"),
])
def test_bad_reports_are_one_line(extra: list[str], message: str, tmp_path: Path) -> None:
    args = ["report", "--out", str(tmp_path / "r"), "--n-range", "512", *extra]
    if "--gpu" not in extra:
        args += ["--gpu", "h200"]
    code, _, err = run(*args)
    assert code == 2 and err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()
