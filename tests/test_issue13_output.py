"""Issue 13 (a newcomer's review): what every command prints fits an 80-column terminal, says
what it counts, and uses one vocabulary. Each test failed on the code before that issue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from iosim.cli import cli
from iosim.output import render

DATA = Path(__file__).parent / "data"
SEED = str(DATA / "seed-accelerator.yaml")


def run(*args: str, columns: int = 80) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def assert_fits(out: str, width: int = 80) -> None:
    """Nothing cut (rich's '…') and no line wider than the terminal or ending in spaces."""
    assert out.strip(), "the command printed nothing"
    for line in out.splitlines():
        # rich cuts a cell as 'valu…' (a range like 1024…16384 is not a cut)
        assert not re.search(r"\S…(\s|$)", line) or line.startswith("…"), line
        assert len(line) <= width, f"{len(line)} columns: {line}"
        assert line == line.rstrip(), f"trailing spaces: {line!r}"


# item 2: a rendering test at 80 columns for every command
COMMANDS = [
    ("compare", "--n", "4096", "--d", "64", "--gpu", "a100", "--sram-elements", "65536"),
    ("compare", "--n", "1", "--n-kv", "32768", "--d", "128", "--heads", "32", "--kv-heads", "8",
     "--gpu", "h100"),
    ("compare", "--n", "1024", "--heads", "16", "--batch", "64", "--gpu", "a100-40gb-sxm",
     "--pass", "fwdbwd"),
    ("compare", "--n", "8192", "--d", "128", "--gpu", "mi300x", "--causal", "--sparsity", "0.5"),
    ("sweep", "--gpu", "a100", "--n", "1024,4096,16384,65536,262144"),
    ("sweep", "--gpu", "h100", "--n", "1,1024", "--n-kv", "32768", "--d", "64,128"),
    ("sweep", "--gpu", "a100,h100", "--n", "1,1024", "--n-kv", "32768", "--d", "64,128",
     "--causal", "no,yes"),
    ("verify", "--n", "64", "--d", "16"),
    ("verify", "--n", "64", "--d", "16", "--pass", "fwdbwd", "--block", "32"),
    ("explain", "softmax"),
    ("explain", "softmax", "--scores", "1,3,-2,0.5,2.5,4", "--block", "3", "--values",
     "1,0;0,1;1,1;2,0;0,2;3,1"),
    ("gpus",),
    ("gpus", "show", "a100"),
    ("gpus", "show", "h200"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_every_command_fits_80_columns(args: tuple[str, ...]) -> None:
    code, out, err = run(*args)
    assert code == 0, err
    assert_fits(out)


def test_roofline_fits_80_columns(tmp_path: Path) -> None:
    # 27 heads × batch 8: flash1's 216 programs fill two whole waves of 108 SMs (one head
    # would fill 1 %, and its FLOP/s would stay far under the peak)
    code, out, err = run("roofline", "--gpu", "a100", "--n", "4096", "--heads", "27", "--batch",
                         "8", "--out", str(tmp_path))
    assert code == 0, err
    assert_fits(out)
    assert "matmul peak because" in out  # item 9: FLOP/s beside a 312 TFLOP/s peak
    # the report's one line is checked by test_report_takes_n_kv_for_a_decode_report (one
    # report build, 14 figures, serves both)


def test_a_cascades_roofline_table_fits_80_columns(tmp_path: Path) -> None:
    """A feature added since the issue (json5's audit): cascade's kernel 'per-request suffix
    attn' made the table 85 columns wide, cut to 'per-request suffix at…', '52.…', 'memo…'."""
    code, out, err = run("roofline", "--gpu", "h100", "--n", "1", "--prefix-len", "4096",
                         "--suffix-lens", "100,200,300", "--batch", "3", "--heads", "32",
                         "--kv-heads", "8", "--out", str(tmp_path))
    assert code == 0, err
    assert_fits(out)
    assert "per-request suffix attn" in out


def test_calibrate_summary_fits_80_columns(tmp_path: Path) -> None:
    code, out, err = run("calibrate", "--gpu", "h200", "--out", str(tmp_path / "h200.yaml"),
                         "--from", str(DATA / "h200-calibration.json"))
    assert code == 0, err
    assert_fits(out)


def test_wide_brings_back_reads_and_writes() -> None:
    _, narrow, _ = run("compare", "--n", "4096", "--gpu", "a100")
    _, wide, _ = run("compare", "--n", "4096", "--gpu", "a100", "--wide", columns=120)
    header = next(line for line in wide.splitlines() if line.lstrip().startswith("algorithm"))
    assert "read" in header.split() and "write" in header.split()
    assert "read" not in next(line for line in narrow.splitlines()
                              if line.lstrip().startswith("algorithm")).split()


# item 8: seed 000's 26.2 MB is Q, K, V, O alone; the rest is fp32 l, m and the initialisation
def test_seed_figure_is_reconciled() -> None:
    code, out, _ = run("compare", "--n", "4096", "--d", "64", "--gpu", "a100",
                       "--sram-elements", "65536")
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip().startswith("Q, K, V, O"))
    assert row.split()[-3:-1] == ["2.1", "MB"] or "26.2 MB" in row
    assert "26.2 MB" in row  # seed 000: "N = 4,096 needs ... about 26.2 megabytes of traffic"
    total = next(line for line in out.splitlines() if line.lstrip().startswith("total"))
    assert "27.8 MB" in total
    assert "flash1 fp32 statistics 1.0 MB + initialisation 557.1 kB" in " ".join(out.split())


# item 9: SI formatting everywhere, and the tables say what they count
@pytest.mark.parametrize(("value", "text"), [
    (1_147_890.1e9, "1.15P"), (2.67e5, "267k"), (240_352, "240k"), (17.0e6, "17M"),
    (1.05e6, "1.05M"), (512, "512"),
])
def test_counts_use_si_prefixes_without_exponents(value: float, text: str) -> None:
    assert render.fmt_count(value) == text


def test_flops_and_times_have_one_format() -> None:
    assert render.fmt_flops(2.67e5) == "267 kFLOP"
    assert render.fmt_flops(240_352) == "240 kFLOP"
    assert render.fmt_flops(4.38e9) == "4.38 GFLOP"
    assert render.fmt_time(0) == "0 s"
    assert render.fmt_time(4e-10) == "0.4 ns"
    assert render.fmt_rate(4.8e18, "FLOP/s") == "4.8 EFLOP/s"
    assert render.fmt_flops(4.0e9) == "4 GFLOP"


def test_compare_says_why_flops_over_peak_is_not_the_time() -> None:
    _, out, _ = run("compare", "--n", "4096", "--gpu", "a100")
    text = " ".join(out.split())
    assert "FLOPs ÷ the matmul peak is not the time" in text
    assert "L2-oblivious" in text


# item 10: one vocabulary, defaults from the seed, and suggestions for names
@pytest.mark.parametrize("dtype", ["fp16", "fp32", "fp64", "float16", "float64"])
def test_verify_takes_every_commands_dtype_names(dtype: str) -> None:
    code, out, err = run("verify", "--n", "32", "--d", "8", "--block", "16", "--dtype", dtype)
    assert code == 0, err
    assert f"data      {dtype.replace('fp', 'float')}" in out


def test_verify_bf16_says_why_not() -> None:
    code, _, err = run("verify", "--n", "32", "--dtype", "bf16")
    assert code == 2 and err.count("\n") == 1 and "use fp16" in err


def test_explain_softmax_defaults_to_the_seed_toy_run() -> None:
    code, out, _ = run("explain", "softmax")
    assert code == 0
    # seed 000: "the running sum is 1.553 ... the weights are 0.2369, 0.0871, 0.0321 and 0.6439"
    for number in ("1.5530", "0.2369", "0.0871", "0.0321", "0.6439"):
        assert number in out


@pytest.mark.parametrize(("args", "hint"), [
    (("compar", "--n", "64"), "Did you mean 'compare'?"),
    (("compare", "--n", "64", "--gpu", "a10"), "Did you mean 'a100'"),
    (("compare", "--n", "64", "--gpu", "a100", "--algo", "flsh1"), "Did you mean 'flash1'"),
    (("verify", "--n", "64", "--dtype", "fp61"), "Did you mean 'fp64'"),
    # the names of the features added since (json5's audit): each failed before with a list
    # of the choices and no suggestion
    (("compare", "--n", "64", "--gpu", "a100", "--impl", "sdpa-flsh"), "Did you mean 'sdpa-flash'?"),
    (("sweep", "--n", "64", "--gpu", "a100", "--impl", "sdpa-flsh"), "Did you mean 'sdpa-flash'?"),
    (("compare", "--n", "64", "--gpu", "a100", "--model", "gemma-2-9b", "--layer", "locl"),
     "Did you mean 'local'"),
    (("compare", "--n", "64", "--gpu", "a100", "--unfused", "dropot"), "Did you mean 'dropout'?"),
    (("compare", "--n", "64", "--gpu", "a100", "--dtype", "fp8e4m3"), "Did you mean 'fp8_e4m3'"),
    (("sweep", "--n", "64", "--gpu", "a100", "--dtype", "fp8e4m3"), "Did you mean 'fp8_e4m3'"),
    (("sweep", "--n", "64", "--gpu", "a100", "--pass", "fwd,bwdd"), "Did you mean 'bwd'"),
    (("compare", "--n", "64", "--gpu", "a100", "--seqlens", "32,32", "--packing", "docment"),
     "Did you mean 'document'?"),
    (("compare", "--n", "64", "--gpu", "a100", "--profile", "measurd"), "Did you mean 'measured'?"),
    (("compare", "--n", "64", "--gpu", "a100", "--dtype", "fp8", "--fp8-scales", "blok"),
     "Did you mean 'block'?"),
    (("compare", "--n", "1", "--gpu", "a100", "--splits", "aut"), "nor auto. Try"),
])
def test_unknown_names_suggest_the_closest(args: tuple[str, ...], hint: str) -> None:
    code, _, err = run(*args)
    assert code == 2 and err.count("\n") == 1 and hint in err


# item 11: SRAM beyond the GPU's is refused unless --force
def test_sram_beyond_the_gpu_is_refused_unless_forced() -> None:
    code, _, err = run("compare", "--n", "4096", "--gpu", "a100", "--sram", "1MiB")
    assert code == 2 and err.count("\n") == 1
    assert "166,912 B of shared memory a block may use" in err and "--force" in err
    code, out, _ = run("compare", "--n", "4096", "--gpu", "a100", "--sram", "1MiB", "--force")
    assert code == 0 and "M = 524,288 fp16 elements (--sram 1MiB)" in " ".join(out.split())


@pytest.mark.parametrize("command", ["roofline", "report"])
def test_roofline_and_report_refuse_it_too(command: str, tmp_path: Path) -> None:
    code, _, err = run(command, "--gpu", "t4", "--n", "1024", "--sram-elements", "100000",
                       "--out", str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1 and "--force" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_sweep_says_which_gpus_cannot_hold_its_sram() -> None:
    """json5's audit: `sweep --sram 1MiB --gpu a100` ran silently with fits yes (the issue's own
    example, on the sweep). It may span GPUs that have the SRAM and GPUs that do not, so it
    counts every point and says, per GPU, which sizes no kernel could launch with: in the
    table's notes, JSON's metadata and, for CSV, on stderr."""
    code, out, _ = run("sweep", "--n", "4096", "--gpu", "a100,h100", "--sram", "128KiB,200KiB")
    said = " ".join(out.split())
    assert code == 0 and "SRAM M = 204,800 B is more than the 166,912 B" in said
    assert "a block may use on a100-80gb-sxm: no kernel could launch with it" in said
    assert "on h100-sxm" not in said  # 227 KiB there: both sizes launch
    code, out, _ = run("sweep", "--n", "4096", "--gpu", "a100", "--sram", "1MiB", "--format",
                       "json")
    assert code == 0 and any("1,048,576 B is more than" in n for n in json.loads(out)["notes"])
    code, out, err = run("sweep", "--n", "4096", "--gpu", "a100", "--sram", "1MiB", "--format",
                         "csv")
    assert code == 0 and err.startswith("warning: SRAM M = 1,048,576 B is more than")
    code, out, err = run("sweep", "--n", "4096", "--gpu", "a100", "--format", "csv")
    assert code == 0 and not err  # the GPU's own SRAM: nothing to say


# item 6: compare's workload flags on roofline and report
def test_roofline_takes_pass_and_splitkv(tmp_path: Path) -> None:
    code, out, err = run("roofline", "--gpu", "h100", "--n", "1024", "--pass", "fwdbwd",
                         "--out", str(tmp_path))
    assert code == 0, err
    code, out, err = run("roofline", "--gpu", "h100", "--n", "1", "--n-kv", "32768", "--d", "128",
                         "--heads", "32", "--kv-heads", "8", "--algo", "splitkv", "--splits", "8",
                         "--out", str(tmp_path), "--name", "decode")
    assert code == 0, err
    assert "combine splits" in out


def test_report_takes_n_kv_for_a_decode_report(tmp_path: Path) -> None:
    code, out, err = run("report", "--gpu", "h100", "--out", str(tmp_path), "--n", "1", "--n-kv",
                       "32768", "--d", "128", "--heads", "32", "--kv-heads", "8", "--batch", "1",
                       "--n-range", "1,1024", "--block-range", "64,128", "--compare-gpus", "h100")
    assert code == 0, err
    assert "…" not in out and out.startswith("wrote ")  # item 2: one line; its length is the path's
    assert out.count("\n") == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["workload"]["n_kv"] == 32768
    assert "--n-kv 32768" in summary["command"]


# item 5: JSON Lines, streamed
def test_sweep_jsonl_is_metadata_then_one_row_per_line() -> None:
    code, out, _ = run("sweep", "--gpu", "a100", "--n", "1,1024,4096", "--format", "jsonl")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["metadata"]["points"] == 3
    assert len(lines) == 1 + 3 * 4  # splitkv joins for N = 1
    assert {row["algorithm"] for row in lines[1:]} == {"standard", "flash1", "flash2", "splitkv"}


# item 12: why FlashAttention is slower, where it is
@pytest.mark.parametrize(("gpu", "d", "algorithm"), [("mi300x", "128", "flash1"),
                                                       ("t4", "256", "flash2"),
                                                       ("a100", "1024", "flash1")])
def test_a_slower_flashattention_says_why(gpu: str, d: str, algorithm: str) -> None:
    code, out, _ = run("compare", "--n", "4096", "--d", d, "--gpu", gpu)
    assert code == 0
    text = " ".join(out.split())
    assert f"Why {algorithm} is slower here" in text
    assert "leave blocks of only" in text and "real kernels" in text


def test_no_why_line_where_flashattention_wins() -> None:
    _, out, _ = run("compare", "--n", "4096", "--heads", "27", "--batch", "8", "--gpu", "a100")
    assert "is slower here" not in out


def test_an_underfilled_flashattention_says_its_grid_is_why() -> None:
    """One head of N 4096 on an A100: flash1 launches 1 program (one per batch × head) on 108
    SMs; the line names the grid, not the tiles."""
    _, out, _ = run("compare", "--n", "4096", "--gpu", "a100")
    text = " ".join(out.split())
    assert "Why flash1 is slower here (0.04×): its 1 program fills 0.93% of the GPU's 108 SMs" in text


def test_a_slower_implementation_with_fewer_bytes_is_not_blamed_on_its_blocks() -> None:
    """A GQA decode step on the H200, measured profile: sdpa-flash moves a quarter of standard's
    L2-oblivious bytes yet its kernels' fitted times add to more. The line must not say its
    small blocks re-read K and V (one query pass re-reads nothing); it names the kernels' times,
    which add to the per-algorithm table's time."""
    _, out, _ = run("compare", "--n", "1", "--n-kv", "65536", "--heads", "32", "--kv-heads", "8",
                    "--d", "128", "--impl", "sdpa-flash", "--gpu", "h200", "--profile", "measured")
    text = " ".join(out.split())
    assert "Why sdpa-flash is slower here" in text
    why = text.split("Why sdpa-flash is slower here", 1)[1].split(").", 1)[0]
    assert "re-read" not in why and "Alg. 1" not in why
    row = next(line.split() for line in out.splitlines()
               if line.startswith(" sdpa-flash ") and "64×128" in line)  # the per-algorithm row
    table_time = " ".join(row[5:7])  # algorithm, blocks, HBM (2 words), ÷ std, time (2 words)
    assert f"= {table_time} against standard's" in why


def test_a_speedup_below_one_hundredth_is_not_printed_as_zero() -> None:
    """flash1 at d = 128 on an MI300X (one head) is hundreds of times slower than standard; the
    speed-up column must say so, and agree with the time column it divides."""
    _, out, _ = run("compare", "--n", "4096", "--d", "128", "--gpu", "mi300x")
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith((" standard ", " flash1 "))}
    assert "0.00×" not in out
    units = {"µs": 1e-6, "ms": 1e-3, "s": 1.0}

    def seconds(row: list[str]) -> float:
        return float(row[5]) * units[row[6]]

    flash1 = rows["flash1"]
    printed = float(flash1[7].rstrip("×"))
    assert printed > 0
    assert printed == pytest.approx(seconds(rows["standard"]) / seconds(flash1), rel=0.05)


@pytest.mark.parametrize("args", [
    ("compare", "--n", "4096", "--gpu", "a100", "--wide"),
    ("sweep", "--n", "1024,4096", "--d", "64,128", "--gpu", "a100", "--wide"),
], ids=lambda a: a[0])
def test_wide_never_cuts_a_cell(args: tuple[str, ...]) -> None:
    """--wide (every column) in an 80-column terminal cut cells to '1.0…', '66.9 …', 'compu…';
    it now prints past 80 columns where its tables need it (the terminal wraps the lines)."""
    code, out, err = run(*args)
    assert code == 0, err
    assert not re.search(r"\S…(\s|$)", out), out
    assert max(len(line) for line in out.splitlines()) > 80  # the wide tables need more
