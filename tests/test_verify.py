"""`iosim verify`: the three counts side by side, the output check, exit statuses, bad input."""

from __future__ import annotations

import json

import pytest

from iosim.analysis.verify import verify
from iosim.execute import MAX_SCORES
from iosim.inputs.workload import Workload
from tests.conftest import run_cli


def run(*args: str) -> tuple[int, str, str]:
    result = run_cli("verify", *args)
    return result.exit_code, result.stdout, result.stderr


def has_row(out: str, row: str) -> bool:
    """Whether a table line holds these cells (the columns' spacing is rich's business)."""
    return any(line.split() == row.split() for line in out.splitlines())


def test_verify_seed_003_shape_prints_the_three_counts_and_the_scores_held() -> None:
    """Seed 003: N = 256, d = 16, 64-row blocks: standard holds 65,536 scores, tiled 4,096."""
    code, out, _ = run("--n", "256", "--d", "16", "--block", "64")
    assert code == 0
    assert any(" ".join(line.split()).endswith("closed form tile walk executor")
               for line in out.splitlines())
    assert has_row(out, "flash1      init      O        write         4,096       4,096      4,096   ✓")
    assert has_row(out, "qk        S        write        65,536      65,536     65,536   ✓")
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


# ---------------------------------------------------------------------------------------------
# the backward pass, split-KV and block-sparse


def test_verify_fwdbwd_checks_the_gradients_of_every_backward() -> None:
    code, out, err = run("--n", "256", "--d", "16", "--block", "64", "--pass", "fwdbwd")
    assert code == 0, out + err
    assert "Gradients (backward pass)" in out
    gradient_rows = [line.split() for line in out.splitlines()
                     if line.split()[:2] in (["flash1", "dQ"], ["flash2", "dQ"], ["standard", "dQ"])]
    assert len(gradient_rows) == 3 and all(row[-1] == "✓" for row in gradient_rows)
    # Alg. 4 line 10 loads dQ_i once per pair: N·d·T_c = 256·16·4; line 5 zeroes it once
    assert has_row(out, "bwd_attn         dQ        read         16,384      16,384     16,384   ✓")
    assert has_row(out, "bwd_init         dQ        write         4,096       4,096      4,096   ✓")
    assert "All counts agree; every output and gradient equals standard attention's" in out


def test_verify_bwd_uneven_causal_gqa_batch_float16_sparse_agrees() -> None:
    code, out, err = run("--n", "150", "--n-kv", "97", "--d", "8", "--heads", "4", "--kv-heads",
                         "2", "--batch", "2", "--causal", "--block-q", "48", "--block-kv", "20",
                         "--dtype", "float16", "--unfused", "scale,mask,dropout", "--pass", "bwd",
                         "--sparsity", "0.6")
    assert code == 0, out + err
    assert "every tensor the executor stored has the model's bytes per element ✓" in out
    assert "bwd_sum_dkdv" in out and "block-sparse s = 0.6" in out
    assert " qk " not in out  # the forward ran uncounted


def test_verify_decode_step_runs_splitkv_with_packed_heads() -> None:
    code, out, err = run("--n", "1", "--n-kv", "300", "--d", "8", "--heads", "4", "--kv-heads", "2",
                         "--block", "32", "--splits", "3", "--format", "json")
    assert code == 0, out + err
    data = json.loads(out)
    names = [a["name"] for a in data["algorithms"]]
    assert names == ["standard", "flash1", "flash2", "splitkv"]  # compare's decode defaults
    split = data["algorithms"][3]
    assert split["splits"] == 3 and split["ok"] and split["stream_equal"]
    terms = {(t["kernel"], t["tensor"], t["op"]): t for t in split["terms"]}
    # K read once per KV head (packed), once per query head by flash2
    assert terms[("splitkv_attn", "K", "read")]["executor"] == 2 * 300 * 8
    flash2 = {(t["kernel"], t["tensor"], t["op"]): t for t in data["algorithms"][2]["terms"]}
    assert flash2[("attn", "K", "read")]["executor"] == 4 * 300 * 8
    assert terms[("splitkv_combine", "O_partial", "read")]["closed_form"] == 3 * 4 * 8


def test_verify_json_lists_the_gradients() -> None:
    code, out, _ = run("--n", "40", "--d", "4", "--block", "16", "--pass", "bwd",
                       "--algo", "flash2", "--format", "json")
    assert code == 0
    data = json.loads(out)
    grads = data["algorithms"][0]["gradients"]
    assert [g["name"] for g in grads] == ["dQ", "dK", "dV"]
    assert all(g["agree"] and g["max_abs_err_vs_float64"] < 1e-12 for g in grads)


def test_verify_reports_a_backward_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break flash1's backward (skip the write of dQ_i) and verify must say so and exit 1."""
    from iosim.execute import InstrumentedHBM

    original_write = InstrumentedHBM.write

    def skip_dq(self: InstrumentedHBM, name: str, *args: object, **kw: object) -> None:
        if not (name == "dQ" and self._kernel == "bwd_attn"):
            original_write(self, name, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(InstrumentedHBM, "write", skip_dq)
    result = verify(Workload(32, d=4, pass_="bwd"), algorithms=["flash1"], block_q=8, block_kv=8)
    check = result.algorithms[0]
    assert not check.counts_agree and not check.gradients_agree  # dQ stays zero
    code, out, _ = run("--n", "32", "--d", "4", "--block", "8", "--algo", "flash1", "--pass", "bwd")
    assert code == 1 and "MISMATCH in flash1" in out


@pytest.mark.parametrize("args,message", [
    (["--n", "64", "--block", "16", "--algo", "splitkv", "--splits", "5"],
     "--splits 5 is more than the 4 key blocks (N_kv 64 in blocks of B_c = 16); use 1 to 4"),
    (["--n", "64", "--algo", "splitkv", "--splits", "0"], "--splits must be a whole number"),
    (["--n", "64", "--splits", "2"], "--splits applies to splitkv, cascade; add it to --algo"),
    (["--n", "64", "--algo", "splitkv", "--pass", "bwd"],
     "splitkv is an inference (forward-only) kernel"),
    (["--n", "64", "--sparsity", "0"], "--sparsity must be a fraction of non-zero blocks in (0, 1]"),
    (["--n", "1", "--n-kv", "64", "--heads", "4", "--kv-heads", "2", "--algo", "splitkv",
      "--sparsity", "0.5", "--block", "16"], "splitkv: splitkv packs the query heads of a KV head"),
    (["--n", "64", "--d", "8", "--pass", "bwd", "--sram", "20KiB"],
     "tiles do not fit in the SRAM: K_j 4,096 B, V_j 4,096 B, dK_j 4,096 B"),
])
def test_verify_backward_and_split_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert message in err
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert "Traceback" not in out + err


def test_public_api_exports_verify_and_walk_arrays() -> None:
    import iosim
    from iosim.algorithms.tilestream import walk_arrays

    assert iosim.verify is verify and iosim.walk_arrays is walk_arrays
    assert {"verify", "Verification", "walk_arrays", "TileStream"} <= set(iosim.__all__)
