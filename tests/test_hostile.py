"""Issue 12's reproductions, one regression test each: bad input gets one `Error:` line and
exit 2 (never a traceback, a hang or a silently wrong number); accepted input finishes."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

import iosim
from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload
from iosim.record import replace
from tests.hostile import A100_YAML, assert_clean, invoke, snapshot, strict_json

GPU_ARGS = ["--gpu", "a100", "--n", "64"]


def _gpu_file(tmp_path: Path, text: str, name: str = "mine.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _replace_value(key: str, value: str) -> str:
    """A100's YAML with `key:`'s `value:` line replaced (key at the top level)."""
    lines = A100_YAML.splitlines()
    at = lines.index(f"{key}:")
    assert lines[at + 1].startswith("  value:")
    lines[at + 1] = f"  value: {value}"
    return "\n".join(lines) + "\n"


def _refused(args: list[str], *needles: str) -> str:
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2, f"accepted: {args}\n{outcome.out[:300]}"
    for needle in needles:
        assert needle in outcome.err, outcome.err
    return outcome.err


# -- tracebacks: hardware YAML -----------------------------------------------------------------


@pytest.mark.parametrize(("text", "needles"), [
    (A100_YAML + "? [a, b]\n: 1\n", ["mine.yaml", "a key is a list"]),
    (A100_YAML.replace("  value: 2039 GB/s", "  value: 2039 GB/s\n  1: a\n  zz: b"),
     ["mine.yaml: hbm_bandwidth.1: unknown key"]),
    (_replace_value("hbm_bandwidth", "[1, 2]"), ["hbm_bandwidth.value", "a list"]),
    (_replace_value("hbm_bandwidth", "{a: 1}"), ["hbm_bandwidth.value", "a mapping"]),
    (_replace_value("hbm_bandwidth", "null"), ["hbm_bandwidth.value", "empty (null)"]),
    (_replace_value("hbm_bandwidth", "2024-01-01"), ["hbm_bandwidth.value", "a date"]),
    (_replace_value("sram_per_block", ".inf"), ["sram_per_block.value", "finite"]),
    (_replace_value("sram_per_sm", ".inf"), ["sram_per_sm.value", "finite"]),
    (_replace_value("hbm_bandwidth", ".inf"), ["hbm_bandwidth.value", "finite"]),
    (_replace_value("hbm_bandwidth", "1.0e+400"), ["hbm_bandwidth.value", "finite"]),
    (_replace_value("hbm_bandwidth", '"1e400"'), ["hbm_bandwidth.value", "finite"]),
    (_replace_value("hbm_bandwidth", "5.0e-324"), ["hbm_bandwidth.value", "at least 1"]),
    (_replace_value("sm_count", str(10**400)), ["sm_count.value", "from 1 to"]),
    (A100_YAML.replace("schema_version: 1", "schema_version: true"), ["schema_version", "got True"]),
    (A100_YAML + "extra:\n  <<: {a: 1}\n", ["merge keys"]),
    ("- a\n- b\n", ["top level", "a list"]),
])
def test_bad_gpu_yaml_is_one_line_naming_file_and_key(tmp_path, text, needles):
    path = _gpu_file(tmp_path, text)
    err = _refused(["compare", "--gpu", path, "--n", "64"], *needles)
    assert "tags" not in err or "merge" not in err  # a merge key is not called a tag


def test_every_roof_inf_is_refused(tmp_path):
    text = A100_YAML
    for rate in ("19.5", "156", "312"):
        text = text.replace(f"value: {rate} TFLOP/s", "value: .inf")
    _refused(["compare", "--gpu", _gpu_file(tmp_path, text), "--n", "64"], "finite")


def test_non_utf8_gpu_file_is_named(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_bytes(A100_YAML.encode() + b"notes2: \xff\n")
    _refused(["compare", "--gpu", str(path), "--n", "64"], "mine.yaml", "not UTF-8", "0xff")


@pytest.mark.parametrize("key", ["notes", "display_name", "sm_count"])
def test_alias_bomb_is_refused_before_expanding(tmp_path, key):
    bomb = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
             f"*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    text = A100_YAML.replace(f"\n{key}:", f"\n{key}_old:") if key != "notes" else A100_YAML
    lines = [line for line in text.splitlines() if not line.startswith(f"{key}_old")]
    body = "\n".join(lines) + "\nbomb:\n" + "\n".join("  " + b for b in bomb) + f"\n{key}: *a8\n"
    started = time.perf_counter()
    err = _refused(["compare", "--gpu", _gpu_file(tmp_path, body), "--n", "64"],
                   "anchors and aliases")
    assert time.perf_counter() - started < 5 and len(err) < 300


def test_huge_gpu_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(A100_YAML + "# " + "x" * (2 << 20) + "\n", encoding="utf-8")
    _refused(["compare", "--gpu", str(path), "--n", "64"], "larger than 1,048,576 bytes")


def test_error_quotes_an_excerpt_not_the_whole_value(tmp_path):
    text = A100_YAML.replace("display_name: NVIDIA A100 80GB SXM4", "display_name: [" +
                             ", ".join(["x" * 50] * 2000) + "]")
    err = _refused(["compare", "--gpu", _gpu_file(tmp_path, text), "--n", "64"], "display_name")
    assert len(err) < 300


# -- tracebacks: flags -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["compare", *GPU_ARGS], ["sweep", *GPU_ARGS], ["verify", "--n", "64"],
    ["roofline", *GPU_ARGS, "--out", "figs"], ["report", *GPU_ARGS, "--out", "rep"],
])
def test_sram_1e400_is_refused_everywhere(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    _refused([*command, "--sram", "1e400"], "--sram")
    assert not any(tmp_path.iterdir())  # nothing written, not even a folder


def test_sweep_value_beyond_int64_is_refused():
    _refused(["sweep", *GPU_ARGS, "--block-kv", "9223372036854775808"], "--block-kv")


@pytest.mark.parametrize("d", ["1000000000", "9223372036854775808"])
def test_verify_does_not_allocate_past_its_cap(d):
    _refused(["verify", "--n", "4", "--d", d], "--d")


def test_verify_memory_cap_is_checked_before_allocating():
    _refused(["verify", "--n", "64", "--d", "200000"], "GiB of arrays", "cap")


def test_verify_negative_seed_is_refused():
    _refused(["verify", "--n", "8", "--seed", "-1"], "--seed")


def test_roofline_name_too_long_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused(["roofline", *GPU_ARGS, "--name", "x" * 300], "--name", "255 bytes")
    assert not any(tmp_path.iterdir())


def test_output_that_is_a_folder_is_refused_even_with_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "figs" / "roofline.png").mkdir(parents=True)
    before = snapshot(tmp_path)
    _refused(["roofline", *GPU_ARGS, "--out", "figs", "--force"], "is a folder")
    assert snapshot(tmp_path) == before


def test_report_refuses_a_folder_in_a_files_place_before_writing_any(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rep" / "roofline.png").mkdir(parents=True)
    before = snapshot(tmp_path)
    _refused(["report", *GPU_ARGS, "--out", "rep", "--force"], "roofline.png")
    assert snapshot(tmp_path) == before  # issue 12: it wrote 19 files first


# -- silently wrong numbers: sweep = compare -----------------------------------------------------


@pytest.mark.parametrize("extra", [
    ["--n", "4096", "--sram-elements", str(2**62), "--dtype", "fp32"],
    ["--n", "64", "--block-kv", str(2**61)],
])
def test_sweep_refuses_what_compare_refuses_instead_of_wrapping(extra):
    compare_err = _refused(["compare", "--gpu", "a100", *extra])
    sweep_err = _refused(["sweep", "--gpu", "a100", *extra])
    assert compare_err == sweep_err


# -- bounded time on accepted input --------------------------------------------------------------

_SLOW_BEFORE = [
    # (flags, what issue 12 measured on the old code)
    ["--n", "64", "--batch", "2147483648"],  # the L2 loop over batch × heads: never returned
    ["--n", "67108864", "--n-kv", "1", "--heads", "128", "--batch", "1024"],  # 498 s
    # block step-down row by row: > 120 s (--force: an SRAM beyond the GPU's is refused without)
    ["--n", "64", "--d", "1", "--sram", "1TiB", "--force"],
    ["--n", "67108864", "--n-kv", "4096", "--d", "1", "--causal", "--pass", "fwdbwd"],  # 17.8 s
]


def test_issue_12_slow_cases_finish():
    """In a child process with a deadline, so that a regression fails instead of hanging."""
    script = (
        "import sys, time\n"
        "from click.testing import CliRunner\n"
        "from iosim.cli import cli\n"
        f"for flags in {_SLOW_BEFORE!r}:\n"
        "    start = time.perf_counter()\n"
        "    r = CliRunner().invoke(cli, ['compare', '--gpu', 'a100', '--format', 'json', *flags])\n"
        "    assert r.exit_code == 0, (flags, r.output)\n"
        "    print(f'{time.perf_counter() - start:.2f}', *flags)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_big_batch_counts_are_exact_python_ints():
    c = compare(Workload(64, batch=2**31), "a100")
    flash2 = c.algorithm("flash2")
    # one block covers N = 64: read Q, K, V once, write O and the fp32 logsumexp L once
    # (FlashAttention-2 Alg. 1 lines 12-13), exactly, at 2^31 heads' worth
    assert flash2.hbm_bytes == c.compulsory_hbm_bytes + 2**31 * 64 * 4


def test_explain_softmax_refuses_50000_scores_at_once():
    scores = ",".join(str(i % 7) for i in range(50_000))
    _refused(["explain", "softmax", "--scores", scores], "at most 1,024")


# -- strict JSON and integer counts --------------------------------------------------------------


def test_flops_fa_convention_is_an_exact_int_at_odd_sizes():
    out = invoke(["compare", "--gpu", "a100", "--n", "1001", "--n-kv", "999", "--d", "65",
                  "--heads", "3", "--causal", "--pass", "fwdbwd", "--format", "json"])
    assert out.code == 0
    for a in strict_json(out.out)["algorithms"]:
        value = a["flops_fa_convention"]
        assert isinstance(value, int)
        # FA2/FA3 convention: 4·N·N_kv·d·heads halved when causal, × 3.5 (3 without recompute)
        forward = 4 * 1001 * 999 * 65 * 3 // 2
        assert value == (forward * 7 // 2 if a["name"] != "standard" else forward * 3)


@pytest.mark.parametrize("args", [
    ["compare", "--gpu", "a100", "--n", "4096"],
    ["compare", "--gpu", "h100", "--n", "1", "--n-kv", "32768", "--d", "128", "--heads", "32",
     "--kv-heads", "8"],
    ["compare", "--gpu", "a100", "--n", "1000", "--causal", "--pass", "fwdbwd", "--unfused",
     "scale,mask,dropout", "--sparsity", "0.3"],
    ["compare", "--gpu", "h200", "--n", "4096", "--d", "128", "--profile", "measured"],
    ["sweep", "--gpu", "a100,h100", "--n", "1,512..4096", "--causal", "no,yes",
     "--pass", "fwd,fwdbwd", "--block-kv", "auto,16,100000"],
    ["verify", "--n", "100", "--d", "8", "--causal", "--pass", "fwdbwd"],
    ["gpus"], ["gpus", "show", "mi300x"],
])
def test_every_json_output_is_strict(args):
    """A NaN or Infinity anywhere would make strict parsers (and jq) refuse the output."""
    outcome = invoke([*args, "--format", "json"])
    assert outcome.code == 0, outcome.err
    assert strict_json(outcome.out)


def test_sweep_plot_refusal_writes_no_figure(tmp_path, monkeypatch):
    """The last figure exists: before, the first ones were written and then the run refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "gpu_comparison.png").write_bytes(b"mine")
    before = snapshot(tmp_path)
    _refused(["sweep", "--gpu", "a100,h100", "--n", "512..2048", "--plot", "figs"],
             "gpu_comparison.png exists")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("field, value", [
    ("hbm_bandwidth_bytes_per_s", math.inf),
    ("hbm_bandwidth_bytes_per_s", 5e-324),
    ("sram_per_block_bytes", math.nan),
    ("hbm_capacity_bytes", "80GB"),
    ("sm_count", 0),
])
def test_hardware_built_in_python_meets_the_yaml_bounds(field: str, value: object) -> None:
    """Issue 12: every value from the Python API is checked too, not only YAML figures."""
    shipped = iosim.load_hardware(iosim.list_hardware()[0].path)
    with pytest.raises(iosim.ConfigError, match=field):
        replace(shipped, **{field: value})


def test_hardware_built_in_python_with_a_subnormal_peak_is_refused() -> None:
    shipped = iosim.load_hardware(iosim.list_hardware()[0].path)
    with pytest.raises(iosim.ConfigError, match="peak_flops_per_s"):
        replace(shipped, peak_flops_per_s={**shipped.peak_flops_per_s, "fp16": 5e-324})
