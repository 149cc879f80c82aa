"""The project's own fuzz suite (issue 12): random and adversarial flags for every command and
mutated GPU YAMLs / measurement files, as a hostile user would write them.

Properties of every case: exit 0 or 2 only; no traceback; on exit 2 stderr is one `Error:`
line and nothing was written (the working folder is the same before and after); on exit 0 a
JSON output is strict (no NaN/Infinity) and its numbers finite; every case under 5 s, except
accepted `roofline`/`report` cases, whose matplotlib rendering alone takes longer on a loaded
machine (their refusals are held to 5 s).

Profiles (tests/conftest.py): `ci`, the default, gives each property a share of FUZZ_SCALE ×
max_examples (about 350 cases in all, a few seconds); `thorough` (HYPOTHESIS_PROFILE=thorough)
about 5,800; docs/input-limits.md records its last run.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import DATA
from tests.hostile import (
    A100_YAML,
    CASE_SECONDS,
    Outcome,
    check_run,
    finite,
    strict_json,
    workdir,
)

BUDGET = settings.default.max_examples


FUZZ_SCALE = 3
"""Fuzz cases per example of the profile: ci's 30 examples give ~350 cases (a few seconds),
thorough's 500 give ~5,800."""


def _examples(share: float) -> int:
    """This property's cases: `share` × FUZZ_SCALE × the profile's max_examples."""
    return max(3, round(BUDGET * FUZZ_SCALE * share))


def fuzz_settings(share: float) -> settings:
    return settings(max_examples=_examples(share), deadline=None, derandomize=BUDGET <= 100,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# -- running one case --------------------------------------------------------------------------


def check_case(args: list[str], folder: Path, *, setup_done: bool = True) -> Outcome:
    """Run one command line in `folder` and hold it to every property of the module doc."""
    outcome = check_run(args, folder)
    event(f"{args[0]}: exit {outcome.code}")
    return outcome


# -- values a hostile user types ---------------------------------------------------------------

HUGE = ["0", "-1", "-0", "67108864", "67108865", "2147483648", "9007199254740992",
        "4611686018427387904", "9223372036854775807", "9223372036854775808",
        "18446744073709551616", "1" + "0" * 30, "9" * 400]
GARBAGE = ["", " ", "abc", "1.5", "nan", "inf", "-inf", "1e400", "0x10", "١٢", "１２", "1_000",
           "--n", "auto", ",", "..", "1,2", "\u202e64", "x" * 300]
FLOATS = ["nan", "inf", "-inf", "1e400", "-1e400", "5e-324", "0", "-0.5", "0.5", "1",
          "1.0000001", "0.3333333333", "1e-30"]
SIZES = ["1e400", "1TiB", "2TiB", "0", "0B", "-1KiB", "1.5", "192KiB", "64KiB", "16B", "1e30B",
         "abc", "nan", "infB", "KiB", "48KiB", "1PB", "5e-324"]
GPUS = ["a100", "h100", "t4", "l4", "mi300x", "b200", "A100", "nope", "./missing.yaml",
        "/", ".", "x" * 300, "a100,h100"]


def _ints(low: int = 1, high: int = 4096) -> st.SearchStrategy[str]:
    plausible = st.integers(low, high).map(str)  # weighted 4 : 1 : 1 so that cases also pass
    return st.one_of(plausible, plausible, plausible, plausible, st.sampled_from(HUGE),
                     st.sampled_from(GARBAGE))


def _floats() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(FLOATS), st.floats(allow_nan=True).map(repr),
                     st.sampled_from(GARBAGE))


def _sizes() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(SIZES), st.integers(-5, 2**45).map(str),
                     st.sampled_from(GARBAGE))


def _lists() -> st.SearchStrategy[str]:
    item = st.one_of(st.integers(1, 4096).map(str), st.sampled_from([*HUGE, "auto"]))
    rng = st.builds(lambda a, b, k, by: f"{a}..{b}{k}{by}" if k else f"{a}..{b}", item, item,
                    st.sampled_from(["", ":", "*"]), st.sampled_from(["0", "1", "2", "64", "-1", ""]))
    return st.one_of(st.lists(st.one_of(item, rng), min_size=1, max_size=3).map(",".join),
                     st.sampled_from(GARBAGE))


def _seqlens() -> st.SearchStrategy[str]:
    """--seqlens: lengths (rarely adding up to the drawn N), garbage, or one huge list."""
    lengths = st.lists(st.one_of(st.integers(1, 4096).map(str), st.sampled_from(HUGE)),
                       min_size=1, max_size=4).map(",".join)
    return st.one_of(lengths, lengths, st.sampled_from(GARBAGE), st.just(",".join(["1"] * 70000)))


def _choice(options: list[str]) -> st.SearchStrategy[str]:
    plausible = st.sampled_from(options)
    return st.one_of(plausible, plausible, plausible, st.sampled_from(GARBAGE))


def _flag_args(draw: Any, flags: dict[str, st.SearchStrategy[str] | None], most: int) -> list[str]:
    """A few of `flags` (None: a bare switch) with drawn values, in a drawn order."""
    chosen = draw(st.lists(st.sampled_from(sorted(flags)), max_size=most, unique=True))
    args: list[str] = []
    for flag in chosen:
        strategy = flags[flag]
        args += [flag] if strategy is None else [flag, draw(strategy)]
    return args


WORKLOAD_FLAGS: dict[str, st.SearchStrategy[str] | None] = {
    "--n-kv": _ints(), "--d": _ints(1, 256), "--heads": _ints(1, 64),
    "--kv-heads": _ints(1, 64), "--batch": _ints(1, 64),
    "--dtype": _choice(["fp16", "bf16", "fp32", "fp8"]), "--causal": None,
    "--unfused": _choice(["scale", "mask", "dropout", "scale,mask,dropout", "mask,mask"]),
    "--block-q": _ints(1, 512), "--block-kv": _ints(1, 512), "--sram": _sizes(),
    "--sram-elements": _ints(1, 2**20),
}
COMPARE_FLAGS = {**WORKLOAD_FLAGS,
                 "--algo": _choice(["standard", "flash1", "flash2", "splitkv", "flash2,splitkv",
                                    "standard,standard", "FLASH1"]),
                 "--pass": _choice(["fwd", "bwd", "fwdbwd"]), "--sparsity": _floats(),
                 "--splits": _ints(1, 64), "--profile": _choice(["spec", "measured"]),
                 "--format": _choice(["table", "json", "csv", "markdown"]),
                 "--window": _ints(), "--seqlens": _seqlens(),
                 "--packing": _choice(["varlen", "document"]),
                 # the flags of the last two sessions (review 4)
                 "--d-v": _ints(1, 256), "--latent-kv": None,
                 "--fp8-scales": _choice(["tensor", "block"]),
                 "--page-size": _ints(1, 256), "--prefix-len": _ints(),
                 "--suffix-lens": st.one_of(_seqlens(), st.just("16,40,9")),
                 "--model": _choice(["llama-3.1-8b", "gemma-2-9b", "deepseek-v3", "qwen3-8b",
                                     "llama", "configs/models/llama-3.1-8b.yaml"]),
                 "--layer": _choice(["local", "global", "all"]),
                 "--impl": _choice(["sdpa-flash", "flex", "torch-naive", "iosim-triton",
                                    "sdpa-cudnn", "nope", "configs/impls/flex.yaml"]),
                 "--tiles": _choice(["code", "alg1"])}


@st.composite
def compare_args(draw: Any, command: str = "compare") -> list[str]:
    args = [command, "--gpu", draw(st.sampled_from(GPUS[:6]) | st.sampled_from(GPUS)),
            "--n", draw(_ints(1, 8192))]
    return args + _flag_args(draw, COMPARE_FLAGS, 6)


SWEEP_FLAGS = {**{flag: _lists() for flag in ("--n-kv", "--d", "--heads", "--kv-heads",
                                             "--batch", "--block-q", "--block-kv",
                                             "--sram-elements", "--splits")},
               "--dtype": _choice(["fp16", "fp16,fp32", "fp8,bf16", "fp16,fp16"]),
               "--causal": _choice(["yes", "no", "no,yes", "maybe"]),
               "--pass": _choice(["fwd", "fwd,bwd,fwdbwd", "bwd"]),
               "--sram": st.one_of(_sizes(), st.just("32KiB..256KiB"), st.just("auto,1e400")),
               "--sparsity": st.one_of(_floats(), st.just("0.25,0.5,1")),
               "--algo": COMPARE_FLAGS["--algo"], "--limit": _ints(1, 50),
               "--window": st.one_of(_lists(), st.just("none,64..256")), "--seqlens": _seqlens(),
               "--format": _choice(["table", "json", "csv", "markdown"])}


@st.composite
def sweep_args(draw: Any) -> list[str]:
    args = ["sweep", "--gpu", draw(st.sampled_from(GPUS)), "--n", draw(_lists())]
    return args + _flag_args(draw, SWEEP_FLAGS, 6)


VERIFY_FLAGS = {"--n-kv": _ints(1, 300), "--d": _ints(1, 64), "--heads": _ints(1, 4),
                "--kv-heads": _ints(1, 4), "--batch": _ints(1, 3), "--causal": None,
                "--sparsity": _floats(), "--dtype": _choice(["float64", "float32", "float16"]),
                "--block": _ints(1, 128), "--block-q": _ints(1, 128), "--block-kv": _ints(1, 128),
                "--sram": _sizes(), "--algo": COMPARE_FLAGS["--algo"], "--splits": _ints(1, 8),
                "--seed": _ints(0, 10), "--unfused": COMPARE_FLAGS["--unfused"],
                "--dropout-p": _floats(), "--pass": _choice(["fwd", "bwd", "fwdbwd"]),
                "--window": _ints(1, 300), "--seqlens": _seqlens(),
                "--format": _choice(["table", "json"])}


@st.composite
def verify_args(draw: Any) -> list[str]:
    return ["verify", "--n", draw(_ints(1, 256)), *_flag_args(draw, VERIFY_FLAGS, 6)]


HOSTILE_ONLY = {"--n": HUGE[:2] + HUGE[5:], "--d": ["0", "-1", "9" * 400, "1048577"],
                "--sram": ["1e400", "0", "-1KiB", "2TiB", "nan", "5e-324"],
                "--batch": ["0", "18446744073709551616"], "--block-kv": HUGE[5:]}


@st.composite
def drawing_args(draw: Any, command: str) -> list[str]:
    """roofline / report: at least one value that must be refused (accepted cases are slow),
    plus random flags and the output flags."""
    flag = draw(st.sampled_from(sorted(HOSTILE_ONLY)))
    args = [command, "--gpu", draw(st.sampled_from(GPUS)), flag,
            draw(st.sampled_from(HOSTILE_ONLY[flag]))]
    if flag != "--n":
        args += ["--n", draw(_ints(1, 4096))]
    out = draw(st.sampled_from(["figs", "a/b/c", "x" * 300, "", ".", "file.txt/sub"]))
    args += ["--out", out]
    if command == "roofline":
        args += ["--name", draw(st.sampled_from(["roofline", "x" * 300, "", ".hidden", "a/b",
                                                   "ok"]))]
    if draw(st.booleans()):
        args.append("--force")
    extra = {k: v for k, v in WORKLOAD_FLAGS.items() if k not in args and k != "--block-kv"}
    return args + _flag_args(draw, extra, 3)


@st.composite
def explain_args(draw: Any) -> list[str]:
    numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                        st.integers(-10, 10).map(str), st.sampled_from(GARBAGE + FLOATS))
    scores = draw(st.one_of(st.lists(numbers, min_size=0, max_size=12).map(",".join),
                            st.integers(0, 3000).map(lambda k: ",".join(["1"] * k))))
    args = ["explain", "softmax", "--scores", scores]
    if draw(st.booleans()):
        args += ["--block", draw(_ints(1, 8))]
    if draw(st.booleans()):
        args += ["--values", draw(st.one_of(st.sampled_from(["1,0;0,1", "1,2,3", "", ";", "1;2,3"]),
                                            st.lists(numbers, max_size=6).map(";".join)))]
    return args


@st.composite
def gpus_args(draw: Any) -> list[str]:
    args = ["gpus"]
    if draw(st.booleans()):
        args += ["show", draw(st.sampled_from(GPUS) | st.text(max_size=20))]
    if draw(st.booleans()):
        args += ["--format", draw(_choice(["table", "json"]))]
    return args


# -- mutated files -----------------------------------------------------------------------------

_YAML_LINES = A100_YAML.splitlines()
_VALUE_LINES = [i for i, line in enumerate(_YAML_LINES) if line.strip().startswith("value:")]
_TOP_KEYS = [i for i, line in enumerate(_YAML_LINES) if line and line[0].isalpha()]
BAD_VALUES = ["0", "-1", "-5 GB/s", "1e400", "1.0e+400", '"1e400"', ".inf", "-.inf", ".nan",
              "5.0e-324", "1e-300 B", "null", "~", "[1, 2]", "{a: 1}", "2024-01-01", "true",
              "!!python/object:os.system x", "!!binary aGk=", "!!set {a}", "*x", "&x 5",
              '"' + "9" * 400 + '"', "9" * 400, "0x1F", "1_000 GB/s", "'192KiB'", "|\n    7",
              "192 KiB KiB", "192 XB", "\U0001F4A5"]
BOMB = ("\nbomb:\n  a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"  b{i}: &b{i} [{', '.join(['*' + ('a' if i == 0 else f'b{i - 1}')] * 9)}]\n"
                  for i in range(7)) + "notes_x: *b6\n")


@st.composite
def mutated_yaml(draw: Any) -> bytes:
    lines = list(_YAML_LINES)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "delete", "duplicate", "retype", "garbage", "tag",
                                     "bomb", "truncate", "mixed_key", "schema"]))
        if kind == "value":
            i = draw(st.sampled_from(_VALUE_LINES))
            if i < len(lines):
                lines[i] = "  value: " + draw(st.sampled_from(BAD_VALUES))
        elif kind == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
        elif kind == "retype":
            i = draw(st.sampled_from(_TOP_KEYS))
            key = lines[i].split(":")[0] if i < len(lines) else "name"
            lines.insert(min(i, len(lines)), f"{key}: {draw(st.sampled_from(BAD_VALUES))}")
        elif kind == "garbage":
            text = "\n".join(lines).encode()
            at = draw(st.integers(0, len(text)))
            return text[:at] + draw(st.binary(min_size=1, max_size=20)) + text[at:]
        elif kind == "tag":
            lines.append(draw(st.sampled_from(["x: !!python/object/apply:os.system [ls]",
                                               "x: !custom 1", "!!map {a: 1}: 2", "x: !!str 1"])))
        elif kind == "bomb":
            return ("\n".join(lines) + BOMB).encode()
        elif kind == "truncate":
            lines = lines[: draw(st.integers(0, len(lines)))]
        elif kind == "mixed_key":
            lines.insert(draw(st.sampled_from(_VALUE_LINES)),
                         draw(st.sampled_from(["  1: a", "  ? [a, b]\n  : 1", "  null: 2",
                                               "  <<: {value: 1}"])))
        elif kind == "schema":  # the first line (a truncated file may have none left)
            lines[:1] = ["schema_version: " + draw(st.sampled_from(["true", "1.0", '"1"', "2",
                                                                     "[1]"]))]
    return ("\n".join(lines) + "\n").encode()


_CONFIG_ROOT = Path(__file__).resolve().parents[1] / "configs"
_CONFIG_TEXTS = {name: (_CONFIG_ROOT / name).read_text(encoding="utf-8") for name in (
    "impls/sdpa-flash.yaml", "impls/flex.yaml", "impls/torch-naive.yaml",
    "models/llama-3.1-8b.yaml", "models/gemma-2-9b.yaml", "models/deepseek-v3.yaml")}
"""Shipped implementation profiles and model presets to mutate (review 4: a profile with
head_dim.multiple_of 0 raised ZeroDivisionError, a block_q of 2^63 OverflowError)."""
BAD_INTS = ["0", "-1", "1e400", ".nan", ".inf", "true", "null", "[8]", "{a: 1}", '"8"', "8.5",
            "9223372036854775808", "9" * 400, "100000", "256", "33", "5e-324", "0x10"]


_VALUE = re.compile(r"\w: (\d+)(?=[,}\s]|$)")
"""A YAML key's number (`block_q: 128`), not a digit inside a source string."""


@st.composite
def mutated_config(draw: Any) -> tuple[str, bytes]:
    """(which file, its mutated text): a number replaced by a bad one, a line deleted or
    duplicated (a duplicate key), garbage bytes, or the file truncated."""
    name = draw(st.sampled_from(sorted(_CONFIG_TEXTS)))
    lines = _CONFIG_TEXTS[name].splitlines()
    numbered = [i for i, line in enumerate(lines) if _VALUE.search(line)]
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["number", "number", "number", "delete", "duplicate",
                                     "garbage", "truncate"]))
        if kind == "number" and numbered:
            i = draw(st.sampled_from(numbered))
            if i < len(lines):
                spots = list(_VALUE.finditer(lines[i]))
                if spots:
                    m = draw(st.sampled_from(spots))
                    lines[i] = (lines[i][:m.start(1)] + draw(st.sampled_from(BAD_INTS))
                                + lines[i][m.end(1):])
        elif kind == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
        elif kind == "garbage":
            text = "\n".join(lines).encode()
            at = draw(st.integers(0, len(text)))
            return name, text[:at] + draw(st.binary(min_size=1, max_size=8)) + text[at:]
        elif kind == "truncate":
            lines = lines[: draw(st.integers(0, len(lines)))]
    return name, ("\n".join(lines) + "\n").encode()


_QUICK = json.loads((DATA / "h200-calibration-quick.json").read_text(encoding="utf-8"))


@st.composite
def mutated_measurements(draw: Any) -> bytes:
    record: Any = json.loads(json.dumps(_QUICK))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["drop", "retype", "number", "garbage", "list"]))
        if kind == "drop":
            record.pop(draw(st.sampled_from(sorted(record))), None)
        elif kind == "retype":
            record[draw(st.sampled_from(sorted(record) or ["schema"]))] = draw(
                st.sampled_from([None, 1, "x", [], {}, True, 1e308]))
        elif kind == "number" and isinstance(record.get("measurements"), list) and record[
                "measurements"]:
            m = draw(st.sampled_from(record["measurements"]))
            if isinstance(m, dict) and m:
                m[draw(st.sampled_from(sorted(m)))] = draw(st.sampled_from(
                    [0, -1, 1e308, 10**30, None, "NaN", [], 1e-320, True]))
        elif kind == "list" and isinstance(record.get("measurements"), list):
            record["measurements"] = record["measurements"][: draw(st.integers(0, 2))]
        elif kind == "garbage":
            text = json.dumps(record).encode()
            at = draw(st.integers(0, len(text)))
            return text[:at] + draw(st.sampled_from([b"NaN", b"Infinity", b"\xff", b"{", b"]",
                                                     b"1e999", b"\x00"])) + text[at:]
    return json.dumps(record).encode()


PLAUSIBLE_FLAGS: dict[str, st.SearchStrategy[str] | None] = {
    "--n-kv": st.integers(1, 65536).map(str), "--d": st.sampled_from(["16", "64", "80", "128", "256"]),
    "--heads": st.sampled_from(["1", "8", "32", "128"]), "--kv-heads": st.sampled_from(["1", "8"]),
    "--batch": st.sampled_from(["1", "16", "1024", "65536"]), "--causal": None,
    "--dtype": st.sampled_from(["fp16", "bf16", "fp32", "fp8"]),
    "--pass": st.sampled_from(["fwd", "bwd", "fwdbwd"]),
    "--unfused": st.sampled_from(["scale", "scale,mask,dropout"]),
    "--sparsity": st.sampled_from(["0.5", "0.125", "0.3"]),
    "--block-q": st.sampled_from(["16", "64", "128"]), "--block-kv": st.sampled_from(["16", "64"]),
}


@st.composite
def plausible_args(draw: Any) -> list[str]:
    """What a user means to be accepted (at sizes up to N = 2^26): most of these must pass."""
    command = draw(st.sampled_from(["compare", "sweep"]))
    n = draw(st.one_of(st.integers(1, 8192), st.sampled_from([2**20, 2**26])))
    args = [command, "--gpu", draw(st.sampled_from(GPUS[:6])), "--n", str(n), "--format", "json"]
    return args + _flag_args(draw, PLAUSIBLE_FLAGS, 5)


# -- the properties ----------------------------------------------------------------------------


@fuzz_settings(0.5)
@given(args=plausible_args())
def test_fuzz_plausible_compare_and_sweep(args):
    with workdir() as folder:
        check_case(args, folder)


@fuzz_settings(0.8)
@given(args=compare_args())
def test_fuzz_compare(args):
    with workdir() as folder:
        check_case(args, folder)


@fuzz_settings(0.6)
@given(args=sweep_args())
def test_fuzz_sweep(args):
    with workdir() as folder:
        check_case(args, folder)


@fuzz_settings(0.4)
@given(args=verify_args())
def test_fuzz_verify(args):
    with workdir() as folder:
        check_case(args, folder)


@fuzz_settings(0.1)
@given(args=st.one_of(drawing_args("roofline"), drawing_args("report")),
       existing=st.sampled_from(["none", "file", "folder"]))
def test_fuzz_roofline_and_report_outputs(args, existing):
    with workdir() as folder:
        (folder / "file.txt").write_text("x")
        if existing != "none":  # an output already there: a file, or a folder in its place
            target = folder / "figs" / "roofline.png"
            target.parent.mkdir()
            target.mkdir() if existing == "folder" else target.write_bytes(b"old")
        check_case(args, folder)


@fuzz_settings(0.3)
@given(args=st.one_of(explain_args(), gpus_args()))
def test_fuzz_explain_and_gpus(args):
    with workdir() as folder:
        check_case(args, folder)


@fuzz_settings(0.8)
@given(text=mutated_yaml(), command=st.sampled_from(["compare", "sweep", "roofline-refused"]),
       fmt=st.sampled_from(["json", "table"]))
def test_fuzz_gpu_yaml(text, command, fmt):
    with workdir() as folder:
        (folder / "gpu.yaml").write_bytes(text)
        if command == "roofline-refused":  # a refusal-only roofline: its --n is refused
            args = ["roofline", "--gpu", "gpu.yaml", "--n", "0", "--out", "figs"]
        else:
            args = [command, "--gpu", "gpu.yaml", "--n", "1024", "--format", fmt]
        check_case(args, folder)


@fuzz_settings(1.0)
@given(case=mutated_config(), fmt=st.sampled_from(["json", "table"]),
       decode=st.booleans())
def test_fuzz_impl_and_model_yaml(case, fmt, decode):
    """A mutated implementation profile (--impl PATH) or model preset (--model PATH)."""
    name, text = case
    with workdir() as folder:
        (folder / "mine.yaml").write_bytes(text)
        flag = "--impl" if name.startswith("impls/") else "--model"
        shape = ["--n", "1", "--n-kv", "4096"] if decode else ["--n", "1024"]
        args = ["compare", "--gpu", "h100", *shape, flag, "mine.yaml", "--format", fmt]
        if name.endswith("gemma-2-9b.yaml") and fmt == "json":
            args += ["--layer", "local"]
        check_case(args, folder)


@fuzz_settings(0.08)
@given(path=st.sampled_from(["missing.yaml", "folder.yaml", "folder/", "/dev/null",
                             "x" * 300 + ".yaml", "empty.yaml", "bin.yaml", "deep.yaml"]))
def test_fuzz_gpu_files_that_are_not_files(path):
    with workdir() as folder:
        (folder / "folder.yaml").mkdir()
        (folder / "folder").mkdir()
        (folder / "empty.yaml").write_bytes(b"")
        (folder / "bin.yaml").write_bytes(bytes(range(256)))
        (folder / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000)
        check_case(["compare", "--gpu", path, "--n", "64"], folder)


@fuzz_settings(0.3)
@given(data=mutated_measurements(), force=st.booleans(), out_exists=st.booleans())
def test_fuzz_calibrate_from(data, force, out_exists):
    with workdir() as folder:
        (folder / "run.json").write_bytes(data)
        if out_exists:
            (folder / "h200.yaml").write_text("mine\n")
        args = ["calibrate", "--gpu", "h200", "--from", "run.json", "--out", "h200.yaml"]
        check_case(args + (["--force"] if force else []), folder)


# -- the Python API (review 4) ------------------------------------------------------------------

_ODD_VALUES = st.sampled_from([
    None, True, False, 0, -1, 1, 3, 64, 4096, 2**63, 1.5, 64.0, float("nan"), float("inf"), "64",
    "no", "", "fp16", "flash2", (), [], (1, 2), [512, 512], {}, object(), b"64",
    *(np.int64(64), np.int32(8), np.uint64(2**63), np.float64(0.5), np.bool_(True),
      np.array([64, 64]), np.array(64))])
_WORKLOAD_KEYWORDS = ("n_kv", "d", "heads", "kv_heads", "batch", "dtype", "causal", "pass_",
                      "unfused", "sparsity", "window", "seqlens", "packing", "d_v", "latent_kv",
                      "fp8_scales", "page_size", "prefix_len", "suffix_lens")


@fuzz_settings(0.5)
@given(n=_ODD_VALUES, extra=st.dictionaries(st.sampled_from(_WORKLOAD_KEYWORDS), _ODD_VALUES,
                                            max_size=3),
       gpu=st.sampled_from(["a100", "h100", None, 5, Path("nope.yaml"), ""]))
def test_fuzz_python_workload_and_compare(n, extra, gpu):
    """Workload(...) and compare(...) with values of any type: an IosimError or a result, never
    another exception, and a result's JSON strict."""
    import iosim

    started = time.perf_counter()
    try:
        workload = iosim.Workload(n, **extra)
        result = iosim.compare(workload, gpu)
    except iosim.IosimError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        finite(strict_json(json.dumps(result.to_dict(), allow_nan=False)))
    assert time.perf_counter() - started < CASE_SECONDS
