"""Hostile implementation profiles (--impl PATH) and model presets (--model PATH), review 4:
one `Error:` line naming the file and key, exit 2. Each case failed on main at 272a447 (the
failure is in its comment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosim.inputs.implementations_yaml import impls_dir
from tests.hostile import assert_clean, invoke

SDPA_FLASH = (impls_dir() / "sdpa-flash.yaml").read_text(encoding="utf-8")
FIRST_ROW = "{d_max: 32, block_q: 128, block_kv: 128, warps: 4,"
D64_ROW = "{d_max: 64, block_q: 128, block_kv: 128, warps: 4, registers_per_thread: 255,"


def _refused(tmp_path: Path, text: str, *needles: str, d: int = 32) -> str:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    args = ["compare", "--gpu", "h100", "--n", "4096", "--heads", "32", "--batch", "8",
            "--d", str(d), "--impl", str(path)]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2, outcome.out[:300]
    for needle in needles:
        assert needle in outcome.err, outcome.err
    return outcome.err


@pytest.mark.parametrize(("old", "new", "needles"), [
    # ZeroDivisionError: integer modulo by zero
    ("multiple_of: 8", "multiple_of: 0", ("head_dim.multiple_of", "from 1 to")),
    # TypeError: int() argument must be ... not 'list'
    ("multiple_of: 8", "multiple_of: [8]", ("head_dim.multiple_of",)),
    # silently int("8") and int(8.5) = 8, int(True) = 1
    ("multiple_of: 8", 'multiple_of: "8"', ("head_dim.multiple_of",)),
    ("multiple_of: 8", "multiple_of: 8.5", ("head_dim.multiple_of",)),
    ("multiple_of: 8", "multiple_of: true", ("head_dim.multiple_of",)),
    # accepted; then every --d was refused as "at most 0"
    ("  max: 256", "  max: 0", ("head_dim.max",)),
    # OverflowError: Python int too large to convert to C long
    (FIRST_ROW, FIRST_ROW.replace("block_q: 128", "block_q: 9223372036854775808"),
     ("forward_tiles[0].block_q", "67,108,864")),
    # accepted: 100,000 warps (3.2 million threads) in one program
    (FIRST_ROW, FIRST_ROW.replace("warps: 4", "warps: 100000"),
     ("forward_tiles[0].warps", "from 1 to 32")),
    (FIRST_ROW, FIRST_ROW + " stages: 0,", ("forward_tiles[0].stages",)),
    (FIRST_ROW, FIRST_ROW + " shared_bytes: 9223372036854775808,",
     ("forward_tiles[0].shared_bytes",)),
])
def test_impl_profile_numbers_are_bounded(tmp_path, old, new, needles):
    assert old in SDPA_FLASH
    _refused(tmp_path, SDPA_FLASH.replace(old, new, 1), "mine.yaml", *needles)


@pytest.mark.parametrize("registers", ["0", "256", "100000"])
def test_impl_profile_registers_per_thread_within_what_a_thread_has(tmp_path, registers):
    # before: 0 and 100,000 were accepted (100,000 gave 1 program per SM)
    text = SDPA_FLASH.replace(D64_ROW, D64_ROW.replace("255", registers), 1)
    _refused(tmp_path, text, "registers_per_thread", "from 1 to 255", d=64)


def test_impl_dtype_refusal_does_not_cite_the_head_dim_source():
    # before: "sdpa-flash runs fp16, bf16, not fp32 (flash-attention ... TORCH_CHECK(head_size
    # <= 256) ...)": the head dim's source quoted as if it were the dtypes'
    args = ["compare", "--gpu", "h100", "--n", "128", "--dtype", "fp32", "--impl", "sdpa-flash"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and "head_size" not in outcome.err
    assert "not --dtype fp32; use --dtype fp16" in outcome.err


def test_shipped_profiles_meet_the_bounds():
    for path in sorted(impls_dir().glob("*.yaml")):
        args = ["compare", "--gpu", "h100", "--n", "1024", "--d", "64", "--impl", str(path)]
        outcome = invoke(args)
        assert_clean(outcome, args)
        assert outcome.code == 0, (path.name, outcome.err)


# -- implementation records (calibrate --impl --from) --------------------------------------------

_RECORD = Path(__file__).parent / "data" / "h200-impl-fit.json"


def _calibrate_from(tmp_path: Path, name: str, data: bytes) -> str:
    record = tmp_path / name
    record.write_bytes(data)
    args = ["calibrate", "--gpu", "h200", "--impl", "sdpa-flash", "--from", str(record),
            "--out", str(tmp_path / "out.yaml")]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2 and not (tmp_path / "out.yaml").exists()
    return outcome.err


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_impl_record_nested_deeply_is_one_line(tmp_path, name):
    # before: RecursionError traceback from json.loads
    err = _calibrate_from(tmp_path, name, b'{"points": ' + b"[" * 200_000 + b"]" * 200_000
                          + b"}")
    assert "nested too deeply" in err


def test_impl_record_with_nan_is_refused(tmp_path):
    # before: NaN in a point's rel_error (an output that was NaN) was fitted as a good point
    text = _RECORD.read_text(encoding="utf-8").replace(
        '"rel_error": 0.00028475126600824296', '"rel_error": NaN', 1)
    assert "NaN" in text
    assert "every number must be finite" in _calibrate_from(tmp_path, "nan.json", text.encode())


def test_impl_record_point_of_a_dtype_it_does_not_run_names_the_point(tmp_path):
    # before: "sdpa-flash runs fp16, bf16, not fp8 ..." without the file or the point
    text = _RECORD.read_text(encoding="utf-8").replace('"dtype": "fp16"', '"dtype": "fp8"', 1)
    err = _calibrate_from(tmp_path, "fp8.json", text.encode())
    assert "fp8.json point 0 (sdpa-flash)" in err and "fp16, bf16" in err
