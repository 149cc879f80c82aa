"""Issue 10: flash1's backward (Algorithm 4) timed by its per-tile latency model in `compare` and
`sweep` with the measured profile (estimates/alg4_time.py, constants in the GPU YAML's
measured.alg4_time); the spec profile and GPUs without the key keep the roofline."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.calibrate import fresh_bwd as FB
from iosim.calibrate.backward_fit import load_record, workload_of
from iosim.errors import ConfigError
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware import Hardware
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.workload import Workload
from iosim.record import replace
from tests.conftest import examples, run_cli

FIT_RECORD = "tests/data/backward-h200-fresh.json"
HELD_OUT = "tests/data/backward-h200-fresh3.json"


@pytest.fixture(scope="module")
def h200() -> Hardware:
    return load_hardware(config_dir() / "h200.yaml")


def _shipped_mapping() -> dict[str, Any]:
    raw = yaml.safe_load((config_dir() / "h200.yaml").read_text())
    return dict(raw["measured"]["alg4_time"])


def test_the_shipped_constants_are_the_fit_on_the_committed_record(capsys: Any) -> None:
    """configs/gpus/h200.yaml's measured.alg4_time is what `python -m iosim.calibrate.fresh_bwd`
    writes from tests/data/backward-h200-fresh.json (benchmarks/backward_h200.py --fresh, NVIDIA
    H200): the three figures and the source, value for value."""
    assert FB.main([FIT_RECORD]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["alg4_time"] == _shipped_mapping()


def test_compare_times_flash1s_backward_by_the_model_within_the_held_out_bounds(
        h200: Hardware) -> None:
    """Measured (tests/data/backward-h200-fresh3.json, held out from the fit: `python3
    benchmarks/backward_h200.py /root/out/fresh3 --fresh3`, NVIDIA H200): `compare --algo flash1
    --pass bwd --profile measured --block-q 64 --block-kv 64` within ±7 % of Algorithm 4's
    measured time at every point (−6.1 % to +5.7 %, reports/backward-h200.md); the fused
    kernel says which model timed it, and the report's time is compare's."""
    record = load_record(HELD_OUT)
    points = [p for p in record["points"] if "flash1_s" in p]
    assert len(points) == 7
    for p in points:
        tiles = p["tiles"]
        c = compare(workload_of(p), h200, algorithms=("flash1",), block_q=tiles["block_r"],
                    block_kv=tiles["block_c"], profile="measured")
        a = c.algorithms[0]
        assert [k.timed_by for k in a.kernels if k.name == "bwd_attn"] == ["alg4"]
        assert abs(a.time_s - p["flash1_s"]) <= 0.07 * p["flash1_s"], p["id"]
        assert math.isclose(a.time_s, FB.alg4_time_s(p, h200), rel_tol=1e-12), p["id"]
        assert any("Alg. 4" in note for note in c.roofs.notes)


def _point(**changes: Any) -> Workload:
    base: dict[str, Any] = {"n": 2048, "d": 64, "heads": 8, "batch": 2, "pass_": "bwd"}
    return Workload(**{**base, **changes})


def test_the_spec_profile_and_a_gpu_without_the_key_keep_the_roofline(h200: Hardware) -> None:
    """Only the measured profile of a GPU with measured.alg4_time uses the model: the spec
    profile, and the same GPU with the key removed, time the fused kernel on its roofline, and
    the note is not printed; the other kernels' times do not move."""
    w = _point()
    bare = replace(h200, measured=replace(h200.measured, alg4_time=None))
    with_model = compare(w, h200, algorithms=("flash1",), profile="measured")
    without = compare(w, bare, algorithms=("flash1",), profile="measured")
    spec = compare(w, h200, algorithms=("flash1",), profile="spec")
    for c in (without, spec):
        assert all(k.timed_by == "roofline" for k in c.algorithms[0].kernels)
        assert not any("Alg. 4" in note for note in c.roofs.notes)
    timed = {k.name: k.time_s for k in with_model.algorithms[0].kernels}
    roofline = {k.name: k.time_s for k in without.algorithms[0].kernels}
    assert timed["bwd_attn"] != roofline["bwd_attn"]
    assert timed["bwd_init"] == roofline["bwd_init"]


def test_other_algorithms_and_the_forward_are_not_timed_by_it(h200: Hardware) -> None:
    """The model times one kernel: flash1's fused backward. flash2's and the Triton backward's
    kernels, and flash1's forward, keep their models."""
    c = compare(_point(pass_="fwdbwd"), h200, algorithms=("flash1", "flash2", "triton"),
                profile="measured")
    timed = {(a.name, k.name): k.timed_by for a in c.algorithms for k in a.kernels}
    assert [key for key, by in timed.items() if by == "alg4"] == [("flash1", "bwd_attn")]


def _sweep_point(w: Workload, **options: Any) -> Any:
    return sweep(SweepSpec(n=(w.n,), gpu=("h200",), d=(w.d,), heads=(w.heads,),
                           kv_heads=(w.kv_heads,), batch=(w.batch,), dtype=(w.dtype,),
                           causal=(w.causal,), pass_=(w.pass_,), **options))


@pytest.mark.parametrize(("causal", "pass_"), list(itertools.product((False, True), ("bwd", "fwdbwd"))))
def test_a_one_point_sweep_equals_compare(h200: Hardware, causal: bool, pass_: str) -> None:
    """sweep_measured.py times flash1's fused backward by the same model on the same bytes:
    a one-point sweep's time equals compare's (d 64 and 128, GQA, N not a power of two, blocks
    given or the paper's)."""
    for w, blocks in ((_point(causal=causal, pass_=pass_), None),
                      (_point(n=3000, d=128, heads=12, kv_heads=4, causal=causal, pass_=pass_),
                       64)):
        options: dict[str, Any] = {} if blocks is None else {"block_q": (blocks,),
                                                             "block_kv": (blocks,)}
        c = compare(w, h200, algorithms=("flash1",), profile="measured", block_q=blocks,
                    block_kv=blocks)
        assert any(k.timed_by == "alg4" for k in c.algorithms[0].kernels)
        s = _sweep_point(w, profile="measured", algorithms=("flash1",), **options)
        grid = s.algorithms[0]
        assert any("Alg. 4" in note for note in s.notes)
        for column in ("time_s", "memory_time_s", "compute_time_s"):
            assert math.isclose(float(getattr(grid, column)[0]),
                                float(getattr(c.algorithms[0].totals, column)),
                                rel_tol=1e-12), (w, column)


@pytest.mark.parametrize(("bad", "key"), [
    ("solo_tflops: 1.16", "solo_tflops: 0"), ("solo_tflops: 1.16", "solo_tflops: fast"),
    ("program_gb_per_s: 94.0", "program_gb_per_s: -1"),
    ("program_gb_per_s: 94.0", "program_gb_per_s: 20000"),
    ("shared_sm_slowdown: 0.33", "shared_sm_slowdown: -0.1"),
    ("shared_sm_slowdown: 0.33", "shared_sm_slowdown: true"),
])
def test_a_bad_constant_is_one_line_naming_its_key(tmp_path: Any, bad: str, key: str) -> None:
    """Bounds (inputs/limits.py, docs/input-limits.md): one line naming the key, exit 2."""
    text = (config_dir() / "h200.yaml").read_text()
    assert bad in text
    path = tmp_path / "h.yaml"
    path.write_text(text.replace(bad, key))
    name = key.split(":")[0]
    with pytest.raises(ConfigError, match=rf"measured\.alg4_time\.{name}"):
        load_hardware(path)
    code, _, err = run_cli("compare", "--gpu", str(path), "--n", "1024", "--pass", "bwd",
                             "--algo", "flash1", "--profile", "measured")
    assert code == 2 and f"measured.alg4_time.{name}" in str(err)
    assert len(str(err).strip().splitlines()) == 1 and "Traceback" not in str(err)


def test_a_missing_or_unknown_field_is_one_line(tmp_path: Any) -> None:
    text = (config_dir() / "h200.yaml").read_text()
    path = tmp_path / "h.yaml"
    path.write_text(text.replace("shared_sm_slowdown: 0.33", "slowdown: 0.33"))
    with pytest.raises(ConfigError, match=r"measured\.alg4_time.*expected a mapping"):
        load_hardware(path)


@settings(max_examples=examples(60), deadline=None)
@given(n=st.integers(1, 3000), n_kv=st.none() | st.integers(1, 3000), block_q=st.integers(1, 300),
       block_kv=st.integers(1, 300), causal=st.booleans())
def test_tiles_per_program_is_the_sum_of_the_programs_steps(
        n: int, n_kv: int | None, block_q: int, block_kv: int, causal: bool) -> None:
    """The model's tiles of one head (a closed form, so compare answers at once at any N) are
    the inner steps of its key blocks as the schedule's list enumerates them."""
    from iosim.algorithms import ALGORITHMS
    from iosim.estimates.alg4_time import alg4_kernel, tiles_per_program
    from iosim.estimates.schedule import program_steps
    from iosim.inputs.tiling import make_tiling

    w = Workload(n, n_kv=n_kv, d=64, pass_="bwd", causal=causal)
    tiling = make_tiling(w, 10**9, "test", block_q=block_q, block_kv=block_kv, outer="kv")
    kernel = next(k for k in ALGORITHMS["flash1"].kernels(w, tiling) if alg4_kernel(k))
    assert tiles_per_program(kernel, w, tiling) == sum(program_steps(kernel, w, tiling))
