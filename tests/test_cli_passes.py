"""`iosim compare --pass/--sparsity/--splits`: bad input (one line, exit 2) and what it prints."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CliOutcome, run_cli

DECODE = ["--n", "1", "--n-kv", "32768", "--d", "128", "--heads", "32", "--kv-heads", "8"]
FIG2 = ["--n", "1024", "--d", "64", "--heads", "16", "--batch", "64", "--gpu", "a100-40gb-sxm"]


def _run(*args: str) -> CliOutcome:
    return run_cli("compare", *args)


@pytest.mark.parametrize(("args", "message"), [
    (["--n", "64", "--pass", "sideways"],
     "Invalid value for '--pass': 'sideways' is not one of 'fwd', 'bwd', 'fwdbwd'"),
    (["--n", "64", "--sparsity", "0"], "--sparsity must be a fraction of non-zero blocks in (0, 1]"),
    (["--n", "64", "--sparsity", "1.01"],
     "--sparsity must be a fraction of non-zero blocks in (0, 1], got 1.01"),
    (["--n", "64", "--sparsity", "-0.5"], "got -0.5; e.g. --sparsity 0.25"),
    (["--n", "64", "--sparsity", "nan"], "--sparsity must be a fraction"),
    ([*DECODE, "--algo", "splitkv", "--splits", "0"],
     "--splits must be a whole number of at least 1, got 0"),
    ([*DECODE, "--algo", "splitkv", "--splits", "257"],
     "--splits 257 is more than the 256 key blocks (N_kv 32768 in blocks of B_c = 128); "
     "use 1 to 256"),
    ([*DECODE, "--splits", "8", "--algo", "flash2"], "--splits applies to splitkv"),
    (["--n", "1", "--n-kv", "32768", "--heads", "32", "--kv-heads", "6"],
     "--kv-heads 6 does not divide --heads 32"),
    ([*DECODE, "--algo", "splitkv", "--pass", "bwd"], "splitkv is an inference (forward-only)"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    result = _run("--gpu", "h100", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.startswith("Error: ")
    assert result.output.count("\n") == 1


def test_figure2_fwdbwd_prints_traffic_flops_time() -> None:
    result = _run(*FIG2, "--pass", "fwdbwd", "--algo", "standard,flash1", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    std, fa = data["algorithms"]
    # Alg. 0 + Alg. 3: (12Nd + 11N²) × 2 bytes × 1024 heads (reference §5: 25.23 GB)
    assert std["hbm_bytes"] == (12 * 1024 * 64 + 11 * 1024**2) * 2 * 1024
    # fwd 4N²d, bwd 2× (standard) / 2.5× (flash) per head: 824.6 / 962.1 GFLOP (reference §5)
    assert std["flops_fa_convention"] == pytest.approx(824.63e9, rel=1e-4)
    assert fa["flops_fa_convention"] == pytest.approx(962.07e9, rel=1e-4)
    assert data["workload"]["pass"] == "fwdbwd"
    assert std["footprint"]["saved_for_backward"] == {"P": 1024**2 * 2 * 1024}


def test_backward_tensor_table_lists_gradients() -> None:
    result = _run(*FIG2, "--pass", "bwd")
    assert result.exit_code == 0, result.output
    out = result.output
    header = next(line for line in out.splitlines() if line.lstrip().startswith("tensor"))
    assert header.split() == ["tensor", "op", "standard", "flash1", "flash2"]
    for row in ("dO ", "dP ", "dS ", "dQ ", "dQaccum ", "dK ", "dV ", "stats (D, L, l, m)"):
        assert f"\n {row}" in out, row
    assert "Kept from forward to backward by standard: P 2 GiB" in out
    assert "flash2 backward: B_r × B_c = 64 × 326" in out


def test_decode_table_shows_occupancy_and_splits() -> None:
    result = _run(*DECODE, "--gpu", "h100")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "grid 32 CTAs on 132 SMs: 24%" in out  # flash2: batch × heads × ⌈1/B_r⌉
    assert "grid 232 CTAs on 132 SMs: 100% (1.8 waves)" in out  # split-KV: 8 KV heads × 29
    assert "29 KV splits of 9 key blocks" in out
    assert "library kernels: grid not modelled" in out


def test_default_forward_output_has_no_issue3_sections() -> None:
    result = _run("--n", "4096", "--gpu", "a100")
    assert result.exit_code == 0
    for text in ("Parallelism", "Kept from forward", "splits ", "sparsity ", "backward:"):
        assert text not in result.output


def test_sparsity_is_reported() -> None:
    result = _run("--n", "4096", "--gpu", "a100", "--sparsity", "0.25", "--format", "json")
    data = json.loads(result.output)
    assert data["workload"]["sparsity"] == 0.25
    table = _run("--n", "4096", "--gpu", "a100", "--sparsity", "0.25").output
    assert "sparsity  s = 1/4: tiled kernels visit ⌈s·P⌉ of their P block pairs" in table
