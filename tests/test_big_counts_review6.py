"""review6 item 1: no bound on N·N_kv·d·batch·heads (was 2^53). compare counts in Python ints;
a sweep counts in int64 below 2^53 and in Python ints (object arrays) at or above it
(sweep_spec.counts_in_python_ints), so both are exact for any workload the per-value bounds
accept. Each check is against an independent exact derivation in Python ints: standard
attention's HBM traffic as the FlashAttention paper's Algorithm 0 states it (load Q, K; write S;
read S, write P; load P, V; write O), and every algorithm's counts scaled from batch 1."""

from __future__ import annotations

import json

from click.testing import CliRunner

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.cli import cli
from iosim.inputs.workload import Workload

N, D, HEADS, BATCH = 1 << 26, 128, 64, 8  # a 64M-token prefill: N·N·d·b·h = 2^68, counts ~2^74
ALGORITHMS = ("standard", "flash1", "flash2", "triton")


def _algorithm0_bytes(n: int, d: int, units: int, element: int) -> tuple[int, int]:
    """FlashAttention paper, Algorithm 0 (standard attention): reads Q, K (line 1), S (line 2),
    P and V (line 3); writes S (line 1), P (line 2), O (line 3); per (batch, head) unit."""
    read = (n * d + n * d + n * n + n * n + n * d) * element * units
    write = (n * n + n * n + n * d) * element * units
    return read, write


def test_standard_attention_past_2_53_is_algorithm_0_to_the_byte() -> None:
    c = compare(Workload(N, d=D, heads=HEADS, batch=BATCH), "h200", algorithms=["standard"])
    standard = c.algorithm("standard")
    read, write = _algorithm0_bytes(N, D, HEADS * BATCH, 2)
    assert read > 1 << 63  # past int64 itself, not only past float64's exact integers
    assert (standard.hbm_read_bytes, standard.hbm_write_bytes) == (read, write)
    s = sweep(SweepSpec(n=(N,), gpu=("h200",), d=(D,), heads=(HEADS,), batch=(BATCH,),
                        algorithms=("standard",)))
    assert (s.algorithm("standard").hbm_read_bytes[0],
            s.algorithm("standard").hbm_write_bytes[0]) == (read, write)


def test_every_count_past_2_53_is_batch_times_the_one_sequence_count() -> None:
    """Batch is an outer loop of every algorithm's kernels: each count at batch B is B times
    its count at batch 1 (that point below 2^53, where int64, the walk and the executor agree:
    tests/test_verify*.py). compare and a one-point sweep at batch B both give it exactly."""
    for pass_, causal in (("fwd", False), ("fwdbwd", True)):
        def workload(batch: int, pass_: str = pass_, causal: bool = causal) -> Workload:
            return Workload(N >> 4, d=D, heads=HEADS, batch=batch, pass_=pass_, causal=causal)

        one = compare(workload(1), "h200", algorithms=list(ALGORITHMS))
        big_batch = 1 << 30
        many = compare(workload(big_batch), "h200", algorithms=list(ALGORITHMS))
        s = sweep(SweepSpec(n=(N >> 4,), gpu=("h200",), d=(D,), heads=(HEADS,),
                            batch=(big_batch,), pass_=(pass_,), causal=(causal,),
                            algorithms=ALGORITHMS))
        for name in ALGORITHMS:
            a1, ab, grid = one.algorithm(name), many.algorithm(name), s.algorithm(name)
            for column in ("hbm_read_bytes", "hbm_write_bytes", "matmul_flops",
                           "elementwise_flops"):
                expected = big_batch * getattr(a1, column)
                assert getattr(ab, column) == expected, (pass_, name, column)
                assert grid.hbm_read_bytes.dtype == object  # Python ints, never int64
                assert getattr(grid, column)[0] == expected, (pass_, name, column)


def test_a_grid_across_2_53_counts_its_small_points_as_an_int64_grid_does() -> None:
    """One grid with a point below 2^53 and one above: the whole grid is counted in Python
    ints, and its small point is the int64 sweep's to the byte."""
    mixed = sweep(SweepSpec(n=(4096,), gpu=("h200",), d=(D,), heads=(HEADS,),
                            batch=(1, 1 << 40)))
    small = sweep(SweepSpec(n=(4096,), gpu=("h200",), d=(D,), heads=(HEADS,), batch=(1,)))
    for grid, ref in zip(mixed.algorithms, small.algorithms, strict=True):
        assert ref.hbm_read_bytes.dtype == "int64"
        assert grid.hbm_read_bytes[0] == int(ref.hbm_read_bytes[0])
        assert grid.hbm_read_bytes[1] == (1 << 40) * int(ref.hbm_read_bytes[0])


def test_json_writes_integers_past_2_53_in_all_their_digits() -> None:
    """compare --format json and sweep --format json/csv: counts are JSON integers, every digit
    (Python's json reads them back exactly; a reader in float64 would round them)."""
    read, _ = _algorithm0_bytes(N, D, HEADS * BATCH, 2)
    flags = ["--gpu", "h200", "--n", str(N), "--d", str(D), "--heads", str(HEADS),
             "--batch", str(BATCH), "--algo", "standard"]
    compared = CliRunner().invoke(cli, ["compare", *flags, "--format", "json"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.output)["algorithms"][0]["hbm_read_bytes"] == read
    swept = CliRunner().invoke(cli, ["sweep", *flags, "--format", "json"])
    assert swept.exit_code == 0, swept.output
    assert json.loads(swept.output)["rows"][0]["hbm_read_bytes"] == read
    csv = CliRunner().invoke(cli, ["sweep", *flags, "--format", "csv"])
    assert csv.exit_code == 0, csv.output
    assert f",{read}," in csv.output


def test_a_list_schedule_too_long_to_run_is_one_line_not_minutes() -> None:
    """The measured profile's list schedule of iosim's Triton backward places every program one
    by one: a causal backward of 128 tokens in batch 2^26 (N·N·d·b·h = 2^43, accepted before
    this session too) was 2^27 heap steps, minutes of silence. compare and sweep both refuse
    it in one line (limits.MAX_SCHEDULED_PROGRAMS), exit 2."""
    flags = ["--gpu", "h200", "--n", "128", "--d", "8", "--batch", str(1 << 26), "--pass",
             "bwd", "--causal", "--profile", "measured", "--algo", "triton"]
    for command in ("compare", "sweep"):
        result = CliRunner().invoke(cli, [command, *flags])
        assert result.exit_code == 2, result.output
        assert "programs per head" in result.output and "--profile spec" in result.output
        assert "Traceback" not in result.output
