"""`iosim verify`: the three counts side by side, the output check, exit statuses, bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iosim.cli import cli
from iosim.execute import MAX_SCORES
from iosim.verify import verify
from iosim.workload import Workload


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["verify", *args])
    return result.exit_code, result.stdout, result.stderr


def test_verify_seed_003_shape_prints_the_three_counts_and_the_scores_held() -> None:
    """Seed 003: N = 256, d = 16, 64-row blocks: standard holds 65,536 scores, tiled 4,096."""
    code, out, _ = run("--n", "256", "--d", "16", "--block", "64")
    assert code == 0
    assert "closed form   tile walk   executor" in out
    assert " flash1      init      O        write         4,096       4,096      4,096   ✓" in out
    assert "             qk        S        write        65,536      65,536     65,536   ✓" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith((" standard ", " flash1 ", " flash2 ")) and "e-" in line}
    assert rows["standard"][3] == "65,536"  # scores held at once
    assert rows["flash1"][3] == rows["flash2"][3] == "4,096"
    assert "All counts agree" in out


def test_verify_one_algorithm() -> None:
    code, out, _ = run("--n", "256", "--d", "16", "--block", "64", "--algo", "flash1")
    assert code == 0
    table_rows = [line.split()[0] for line in out.splitlines() if line.startswith(" ") and line.strip()]
    assert "flash1" in table_rows and "flash2" not in table_rows
    # standard still runs, as the reference: its scores are shown, its counts are not
    reference = next(line for line in out.splitlines() if line.startswith(" standard (reference)"))
    assert reference.split()[3] == "65,536"
    assert " qk " not in out


def test_verify_uneven_causal_gqa_batch_float16_agrees() -> None:
    code, out, err = run("--n", "150", "--n-kv", "97", "--d", "8", "--heads", "4", "--kv-heads",
                         "2", "--batch", "2", "--causal", "--block-q", "48", "--block-kv", "20",
                         "--dtype", "float16", "--unfused", "scale,mask,dropout")
    assert code == 0, out + err
    assert "every tensor the executor stored has the model's bytes per element ✓" in out


def test_verify_json_has_every_term() -> None:
    code, out, _ = run("--n", "64", "--d", "8", "--block", "16", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "iosim.verify/1" and data["ok"] is True
    flash1 = next(a for a in data["algorithms"] if a["name"] == "flash1")
    assert all(t["closed_form"] == t["walk"] == t["executor"] for t in flash1["terms"])
    assert flash1["peak_scores"] == 256
    assert data["sram"]["bytes"] == (2 * 16 + 2 * 16) * 8 * 8 + 2 * 16 * 8  # float64 tiles


def test_verify_api_reports_a_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break the executor's flash2 (read K_j twice) and verify must say so and fail."""
    from iosim.execute import EXECUTORS, InstrumentedHBM

    original_read = InstrumentedHBM.read

    def double_k(self: InstrumentedHBM, name: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
        if name == "K":
            original_read(self, name, *args, **kw)
        return original_read(self, name, *args, **kw)

    monkeypatch.setattr(InstrumentedHBM, "read", double_k)
    assert ("flash2", "fwd") in EXECUTORS
    result = verify(Workload(64, d=8), algorithms=["flash2"], block_q=16, block_kv=16)
    check = result.algorithms[0]
    assert not result.ok and not check.counts_agree and not check.stream_equal
    k_term = next(t for t in check.terms if (t.tensor, t.op) == ("K", "read"))
    assert k_term.executor == 2 * k_term.closed_form == 2 * k_term.walk
    assert check.stream_difference is not None and "read K" in check.stream_difference


def test_verify_cli_exits_1_on_a_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    from iosim.execute import InstrumentedHBM

    original_write = InstrumentedHBM.write

    def skip_l(self: InstrumentedHBM, name: str, *args: object, **kw: object) -> None:
        if name != "L":
            original_write(self, name, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(InstrumentedHBM, "write", skip_l)
    code, out, _ = run("--n", "32", "--d", "4", "--block", "16", "--algo", "flash2")
    assert code == 1
    assert "MISMATCH in flash2" in out and "✗" in out


def test_verify_n_1024_d_64_agrees() -> None:
    """The benchmark's command (benchmarks/verify_speed.py times it; the target is 5 s)."""
    code, out, _ = run("--n", "1024", "--d", "64")
    assert code == 0
    assert "All counts agree" in out


@pytest.mark.parametrize("args,message", [
    (["--n", "100000"], f"--n 100000 is too large for an executor run: batch × heads × N × N_kv "
                        f"= 10,000,000,000 scores, the limit is {MAX_SCORES:,}"),
    (["--n", "4096", "--heads", "2"], "use the closed form: iosim compare --n 4096"),
    (["--n", "2048", "--block", "4"], "tile pairs (batch × heads × T_r × T_c), the executor's limit"),
    (["--n", "64", "--block", "0"], "Invalid value for '--block': 0 is not in the range x>=1"),
    (["--n", "64", "--d", "8", "--sram", "1KiB"], "tiles do not fit in the SRAM"),
    (["--n", "64", "--sram", "lots"], "--sram: 'lots' is not a quantity"),
    (["--n", "64", "--algo", "flash9"], "unknown algorithm 'flash9'"),
    (["--n", "64", "--kv-heads", "3", "--heads", "4"], "--kv-heads 3 does not divide --heads 4"),
    (["--n", "64", "--unfused", "dropout", "--dropout-p", "1"], "--dropout-p must be in [0, 1)"),
    (["--n", "64", "--dtype", "bfloat16"], "Invalid value for '--dtype'"),
    (["--n", "0"], "--n must be at least 1, got 0"),
])
def test_verify_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert message in err
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert "Traceback" not in out + err
