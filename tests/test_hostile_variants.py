"""The flags of the last two sessions under a demanding user (review 4): contradictory
combinations get one line in the CLI's own words, and a sweep accepts and counts what
compare does. Each case failed on main at 272a447 (the failure is in its comment)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.hostile import assert_clean, invoke


def _run(args: list[str]) -> tuple[int, str, str]:
    outcome = invoke(args)
    assert_clean(outcome, args)
    return outcome.code, outcome.out, outcome.err


def test_paged_cache_with_a_backward_pass_is_refused_in_the_clis_words():
    # before: "flash2 does not read a paged KV cache (a backward pass does not run over a KV
    # cache; use pass_='fwd'); drop --page-size or use flash2 or splitkv": a Python keyword in
    # a CLI message, and flash2 refused while flash2 is suggested
    code, _, err = _run(["compare", "--gpu", "a100", "--n", "1", "--n-kv", "4096",
                         "--page-size", "16", "--pass", "bwd"])
    assert code == 2
    assert "--pass fwd" in err and "pass_" not in err and "use flash2" not in err


@pytest.mark.parametrize("args", [
    ["compare", "--gpu", "a100", "--n", "1", "--prefix-len", "512"],
    ["compare", "--gpu", "a100", "--n", "1", "--prefix-len", "512", "--suffix-lens", ""],
])
def test_shared_prefix_example_is_a_flag_value_not_a_python_tuple(args):
    # before: "(e.g. --prefix-len 512, --suffix-lens (16, 40, 9))"
    code, _, err = _run(args)
    assert code == 2 and "(16, 40, 9)" not in err and "16,40,9" in err


def test_a_sweep_axis_in_an_error_is_spelled_as_the_flag_list():
    # before: "--heads (32, 8) contradicts --model llama-3.1-8b"
    code, _, err = _run(["sweep", "--gpu", "h100", "--n", "1024", "--model", "llama-3.1-8b",
                         "--heads", "32,8"])
    assert code == 2 and "--heads 32,8 contradicts" in err


def _sweep_rows(args: list[str]) -> list[dict[str, str]]:
    code, out, err = _run(["sweep", *args, "--format", "csv"])
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def test_sweep_over_a_windowed_layer_shorter_than_its_window_equals_compare():
    # before: sweep refused "--window 4096 is longer than the --n-kv 1024 keys" (a window the
    # user never typed) while compare counts the layer as full attention
    model = ["--gpu", "h100", "--model", "gemma-2-9b", "--layer", "local"]
    rows = _sweep_rows([*model, "--n", "1024,8192"])
    for row in rows:
        code, out, _ = _run(["compare", *model, "--n", row["n"], "--format", "json"])
        assert code == 0
        layer = json.loads(out)["layer_kinds"][0]["comparison"]
        same = {a["name"]: a for a in layer["algorithms"]}[row["algorithm"]]
        assert int(row["hbm_bytes"]) == same["hbm_bytes"]
        assert float(row["time_s"]) == pytest.approx(same["time_s"], rel=1e-12)
        # the window column says where the window applies: 0 (none) where it covers every key
        assert int(row["window"]) == (0 if int(row["n"]) <= 4096 else 4096)
        assert layer["workload"].get("window") == (None if int(row["n"]) <= 4096 else 4096)


def test_a_typed_window_longer_than_the_keys_is_still_refused_by_sweep():
    code, _, err = _run(["sweep", "--gpu", "h100", "--n", "1024", "--window", "2048"])
    assert code == 2 and "longer than the --n-kv 1024 keys" in err


@pytest.mark.parametrize("extra", [
    ["--n", "1", "--prefix-len", "512", "--suffix-lens", "16,40"],
    ["--n", "4096", "--seqlens", "1000,3096"],
])
def test_report_takes_the_batch_that_suffixes_or_packed_sequences_imply(tmp_path, monkeypatch,
                                                                        extra):
    # before: "--suffix-lens lists 2 requests but --batch 64" / "--seqlens ... got --batch 64":
    # report's default batch of 64, which the user never typed, was taken as given. The
    # report's workload is caught where it is handed to build_report (its figures take
    # seconds to draw and are not what is tested here)
    import iosim.output.report as report

    monkeypatch.chdir(tmp_path)
    built = []

    def capture(request, out_dir, *, force):
        built.append(request.workload)
        raise SystemExit(0)

    monkeypatch.setattr(report, "build_report", capture)
    outcome = invoke(["report", "--gpu", "h100", *extra, "--out", "rep"])
    assert outcome.code == 0, outcome.err
    assert [w.batch for w in built] == [2 if "--suffix-lens" in extra else 1]


@pytest.mark.parametrize("command", ["compare", "sweep"])
def test_a_typed_batch_contradicting_the_suffixes_is_refused(command):
    # before: --batch 1 with two suffixes was silently replaced by 2 (--batch 3 was refused)
    code, _, err = _run([command, "--gpu", "a100", "--n", "1", "--prefix-len", "512",
                         "--suffix-lens", "16,40", "--batch", "1"])
    assert code == 2 and "lists 2 requests but --batch 1" in err


@pytest.mark.parametrize(("args", "needle"), [
    # before: accepted; numpy's "RuntimeWarning: overflow encountered in subtract" on stderr
    (["--scores", "-1e308,1e308"], "--scores must be within"),
    # before: accepted; "output O: online [inf], one pass [1000...(300 digits)...]"
    (["--scores", "0,0", "--values", "1e308;1e308"], "--values must be within"),
])
def test_explain_softmax_refuses_magnitudes_that_leave_float64(args, needle):
    code, _, err = _run(["explain", "softmax", *args])
    assert code == 2 and needle in err


def test_explain_softmax_at_its_magnitude_bound_is_exact_and_quiet():
    outcome = invoke(["explain", "softmax", "--scores", "1e9,-1e9", "--values", "1e9;-1e9",
                      "--block", "1"])
    assert outcome.code == 0 and outcome.err == ""
    assert "online [1000000000.0000], one pass [1000000000.0000]" in outcome.out


@pytest.mark.parametrize("mask", [["--causal", "--window", "1"], ["--seqlens", "67108864"]])
def test_a_mask_over_millions_of_one_row_blocks_is_refused_before_allocating(mask):
    # before: N = 2^26 at d = 1 (flash1's Alg. 1 blocks of B_r = 1: 2^26 row blocks) ran 80 s
    # (window) and 45 s (seqlens), holding gigabytes of per-block arrays
    code, _, err = _run(["compare", "--gpu", "h100", "--n", "67108864", "--d", "1", *mask])
    assert code == 2 and "row blocks, beyond the 1,048,576" in err and "--block-q" in err


def test_verify_refuses_a_dropout_probability_without_the_dropout_kernel():
    # before: accepted and ignored (no dropout kernel ran)
    code, _, err = _run(["verify", "--n", "64", "--d", "8", "--dropout-p", "0.5"])
    assert code == 2 and "add --unfused dropout" in err


@pytest.mark.parametrize("flag", ["--gpu", "--model", "--impl"])
def test_a_folder_given_as_a_yaml_file_is_called_a_folder(tmp_path, flag):
    # before: "no such model file: .../dir.yaml" (it exists: it is a folder)
    folder = tmp_path / "mine.yaml"
    folder.mkdir()
    args = ["compare", "--n", "64", *(["--gpu", "h100"] if flag != "--gpu" else []),
            flag, str(folder)]
    code, _, err = _run(args)
    assert code == 2 and "is a folder, not a" in err


def test_one_key_block_per_split_is_singular():
    # before: "16 KV splits of 1 key blocks"
    code, out, _ = _run(["compare", "--gpu", "h100", "--n", "1", "--n-kv", "4096",
                         "--algo", "splitkv"])
    assert code == 0 and "16 KV splits of 1 key block (" in out


def test_dram_line_calls_not_covered_only_kernels_the_l2_model_does_not_touch():
    # before: "kernels ..., splitkv_attn, ... are not covered by the L2 model and count at
    # their L2-oblivious bytes" beside splitkv's estimate of 151.6 kB against 416.1 kB
    # oblivious: its K and V terms are modelled (a shared prefix read from DRAM once)
    args = ["compare", "--gpu", "h100", "--n", "1", "--prefix-len", "512", "--suffix-lens",
            "16,40,9"]
    code, out, _ = _run(args)
    assert code == 0
    _, js, _ = _run([*args, "--format", "json"])
    line = " ".join(out[out.index("DRAM estimate"):].split())
    named = line.split("; kernels ")[1].split(" are not covered")[0].split(", ")
    terms = [t for a in json.loads(js)["algorithms"] for t in a["dram_estimate"]["terms"]]
    for kernel in named:
        own = [t for t in terms if t["kernel"] == kernel]
        assert own and all(t["bytes"] == t["l2_oblivious_bytes"] for t in own), kernel
    assert "splitkv_attn" not in named and "splitkv_attn" in line


def test_every_sweep_axis_has_a_caption_word():
    from iosim.analysis.sweep_spec import AXES
    from iosim.output.plot_select import _AXIS_LABELS

    assert set(AXES) <= set(_AXIS_LABELS)


@pytest.mark.parametrize("axis", [{"window": (None, 512)}, {"sparsity": (0.25, 1.0)},
                                  {"splits": (None, 2), "algorithms": ("flash2", "splitkv")}])
def test_sweep_figure_series_over_the_new_axes(axis):
    # before: sweep --n 4096..65536 --window none,512 --plot figs -> KeyError: 'window'
    import iosim
    from iosim.output.plot_select import series_along

    result = iosim.sweep(iosim.SweepSpec(n=(4096, 8192), gpu=("h100",), causal=(True,),
                                         **axis))
    series, _ = series_along(result, "n")
    labels = [s.label for s in series]
    assert len(labels) == 2 and all(labels)
    if "window" in axis:
        assert labels == ["no window", "window 512"]


def test_a_shared_prefix_batch_holds_its_prefix_once():
    # before: fits HBM "no" for 8 requests over a 2^20-token prefix on an 80 GB H100: the
    # footprint held batch × N_kv rows of K and V (137 GB) while the cache holds the prefix once
    # (the L2 model and cascade read that one copy): prefix + Σ suffix rows (17 GB)
    import iosim

    suffixes = (1, 5, 2, 9, 1, 1, 3, 1)
    prefix, heads, d = 1 << 20, 32, 128
    w = iosim.Workload(1, prefix_len=prefix, suffix_lens=suffixes, batch=len(suffixes),
                       n_kv=prefix + max(suffixes), d=d, heads=heads)
    c = iosim.compare(w, "h100")
    kv_rows = prefix + sum(suffixes)  # rows of K (and of V) the cache holds, per KV head
    q_and_o = 2 * len(suffixes) * heads * d * 2
    for a in c.algorithms:
        assert a.footprint.io_bytes == 2 * kv_rows * heads * d * 2 + q_and_o, a.name
        assert a.footprint.fits
    rows = _sweep_rows(["--gpu", "h100", "--n", "1", "--prefix-len", str(prefix),
                        "--suffix-lens", ",".join(map(str, suffixes)), "--d", str(d),
                        "--heads", str(heads)])
    assert rows and all(row["fits_in_hbm"] == "True" for row in rows)


def test_plots_hbm_marker_agrees_with_the_sweeps_fits_column_on_a_shared_prefix():
    # before: the plots' fits check (analysis/hbm_fit.py) rebuilt each point without its
    # non-axis fields (shared prefix, packed sequences, paged cache), so it judged another
    # workload than the sweep's own fits_in_hbm column
    import numpy as np

    import iosim
    from iosim.analysis.hbm_fit import hbm_fits

    result = iosim.sweep(iosim.SweepSpec(n=(1,), gpu=("h100",), d=(128,), heads=(32,),
                                         batch=(8,), n_kv=((1 << 20) + 9,), prefix_len=1 << 20,
                                         suffix_lens=(1, 5, 2, 9, 1, 1, 3, 1),
                                         algorithms=("standard", "splitkv", "cascade")))
    columns = result.columns()
    assert len(columns["algorithm"]) >= 2
    for algorithm, fits in zip(columns["algorithm"], columns["fits_in_hbm"], strict=True):
        assert bool(hbm_fits(result, str(algorithm), np.array([0]))[0]) == bool(fits)
        assert fits


@pytest.mark.parametrize(("command", "flags", "needle"), [
    # before: ValueError: invalid literal for int() with base 10: '²' ('²'.isdigit() is True)
    ("compare", ["--gpu", "a100", "--n", "2", "--seqlens", "²"], "--seqlens entry 1"),
    ("sweep", ["--gpu", "a100", "--n", "2", "--seqlens", "²"], "--seqlens entry 1"),
    ("verify", ["--n", "2", "--seqlens", "²"], "--seqlens entry 1"),
    # before: StopIteration (the bad entry was searched for with the same isdigit test)
    ("compare", ["--gpu", "a100", "--n", "1", "--prefix-len", "10", "--suffix-lens", "²"],
     "--suffix-lens must be whole numbers"),
])
def test_a_superscript_digit_in_a_length_list_is_refused(command, flags, needle):
    code, _, err = _run([command, *flags])
    assert code == 2 and needle in err


def test_seqlens_and_suffix_lens_read_their_entries_alike():
    # before: --suffix-lens took '+3' and '3_0' (= 30) where --seqlens refused them
    from iosim.cli.common import parse_seqlens, parse_suffix_lens

    for text in ("+3,4", "3_0,4", " 3 , 4 ", "３,4"):
        assert parse_seqlens(text) == parse_suffix_lens(text)


@pytest.mark.parametrize("args", [["gpus"], ["models"], ["sweep", "--gpu", "a100", "--n", "64"],
                                  ["compare", "--gpu", "a100", "--n", "64"]])
def test_a_columns_variable_that_is_no_number_is_ignored(args):
    # before: COLUMNS=² -> ValueError: invalid literal for int() (rich, and console.py, read it
    # with str.isdigit(), which takes '²' for a digit)
    from click.testing import CliRunner

    from iosim.cli import cli

    done = CliRunner().invoke(cli, args, env={"COLUMNS": "²", "LINES": "³"})
    assert done.exit_code == 0 and done.exception is None, done.output


def test_compulsory_traffic_of_a_shared_prefix_batch_is_a_floor_every_algorithm_meets():
    # before: "compulsory traffic 424.7 kB" (every request's padded copy of the prefix) beside
    # cascade moving 155.5 kB and standard's Q, K, V, O 410.6 kB: a floor above what runs.
    # Held to an independent count: the prefix's K and V once, each suffix, Q and O
    import iosim

    w = iosim.Workload(1, prefix_len=512, suffix_lens=(16, 40, 9), batch=3, n_kv=552)
    c = iosim.compare(w, "h100")
    assert c.compulsory_hbm_bytes == (512 + 16 + 40 + 9) * 64 * 2 * 2 + 2 * 3 * 64 * 2
    assert all(a.hbm_bytes >= c.compulsory_hbm_bytes for a in c.algorithms)
