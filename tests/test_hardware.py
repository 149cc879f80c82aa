"""Hardware YAML: every shipped GPU loads; every malformed file is named with file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosim.errors import ConfigError, UnknownGpuError
from iosim.inputs.gpus import list_hardware, resolve_hardware, shipped_config_paths
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.units import parse_quantity

SHIPPED = [
    "a100-40gb-sxm", "a100-80gb-sxm", "b200", "h100-pcie", "h100-sxm", "h200", "l4", "mi250x",
    "mi300x", "rtx-3090", "rtx-4090", "t4", "v100-sxm2",
]  # the GPUs issue 2 asks for


def test_every_requested_gpu_ships():
    assert sorted(p.stem for p in shipped_config_paths()) == SHIPPED


@pytest.mark.parametrize("path", shipped_config_paths(), ids=lambda p: p.stem)
def test_shipped_config_is_complete(path: Path):
    hw = load_hardware(path)
    assert hw.name == path.stem
    for key in ("hbm_capacity", "hbm_bandwidth", "l2_size", "sram_per_sm", "sram_per_block",
                "sm_count", "peak_flops.fp32", "peak_flops.fp16"):  # no bf16 on T4/V100
        assert key in hw.figures, f"{path.name} lacks {key}"
    for key, figure in hw.figures.items():
        assert figure.source.strip(), f"{path.name}: {key} has no source"
    assert hw.sram_per_block_bytes <= (hw.sram_per_sm_bytes or float("inf"))


def test_aliases_are_unique_and_resolve():
    seen: dict[str, str] = {}
    for hw in list_hardware():
        for alias in hw.aliases:
            assert alias not in seen, f"alias {alias} used by {seen[alias]} and {hw.name}"
            assert alias not in SHIPPED
            seen[alias] = hw.name
    for alias, name in seen.items():
        assert resolve_hardware(alias).hardware.name == name


def test_alias_a100_is_said():
    resolved = resolve_hardware("a100")
    assert resolved.hardware.name == "a100-80gb-sxm"
    assert resolved.note == "'a100' is an alias of a100-80gb-sxm"


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(UnknownGpuError, match="Known: a100-40gb-sxm, a100-80gb-sxm, b200"):
        resolve_hardware("a1000")


def test_user_yaml_by_path(tmp_path):
    from tests.conftest import SEED_ACCELERATOR

    resolved = resolve_hardware(str(SEED_ACCELERATOR))
    assert resolved.how == "file" and resolved.hardware.peak_flops("fp16") == 300e12


MINIMAL = """\
schema_version: 1
name: mine
hbm_capacity: {value: 16 GB, source: s}
hbm_bandwidth: {value: 1 TB/s, source: s}
sram_per_block: {value: 64 KiB, source: s}
peak_flops:
  fp16: {value: 100 TFLOP/s, source: s}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return path


def test_minimal_yaml_loads(tmp_path):
    hw = load_hardware(_write(tmp_path, MINIMAL))
    assert hw.sram_per_block_bytes == 65536 and hw.hbm_bandwidth_bytes_per_s == 1e12


@pytest.mark.parametrize(("text", "message"), [
    (MINIMAL + "colour: red\n", "mine.yaml: colour: unknown key"),
    (MINIMAL.replace("hbm_bandwidth: {value: 1 TB/s, source: s}\n", ""), "hbm_bandwidth: missing"),
    (MINIMAL.replace("1 TB/s", "fast"), "hbm_bandwidth.value: 'fast' is not a quantity"),
    (MINIMAL.replace("1 TB/s", "1 TB"), "hbm_bandwidth.value: unit 'TB' in '1 TB' is not one of"),
    (MINIMAL.replace("64 KiB", "-64 KiB"), "sram_per_block.value: '-64 KiB' is not a quantity"),
    (MINIMAL.replace("64 KiB", "0 KiB"), "sram_per_block.value: must be positive"),
    (MINIMAL.replace("{value: 64 KiB, source: s}", "{value: 64 KiB}"), "sram_per_block.source: missing"),
    (MINIMAL.replace("schema_version: 1", "schema_version: 2"), "schema_version: must be 1"),
    (MINIMAL + "sm_count: {value: 1.5, source: s}\n", "sm_count.value: must be a whole number"),
    (MINIMAL + "aliases: a\n", "aliases: must be a list"),
    (MINIMAL.replace("fp16:", "fp12:"), "peak_flops.fp12: unknown dtype"),
    (MINIMAL + "hbm_capacity: {value: 1 GB, source: s}\n", "duplicate key 'hbm_capacity'"),
    (MINIMAL + "notes: !!python/object:os.system x\n", "YAML tags are not allowed"),
    ("name: [unclosed\n", "not valid YAML at line"),
    ("- a list\n", "expected a mapping of keys at the top level"),
])
def test_bad_yaml_names_file_and_key(tmp_path, text, message):
    with pytest.raises(ConfigError, match=None) as info:
        load_hardware(_write(tmp_path, text))
    assert message in str(info.value)
    assert "mine.yaml" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("text", "dimension", "value"), [
    ("192KiB", "bytes", 196608), ("192 KB", "bytes", 192000), ("2039 GB/s", "bytes_per_s", 2.039e12),
    ("312 TFLOP/s", "flops_per_s", 312e12), ("1.5e3", "bytes", 1500), (4096, "bytes", 4096),
])
def test_parse_quantity(text, dimension, value):
    assert parse_quantity(text, dimension) == pytest.approx(value)


def test_peak_of_missing_dtype_says_what_to_do():
    hw = resolve_hardware("a100").hardware
    from iosim.errors import IosimError

    with pytest.raises(IosimError, match="a100-80gb-sxm has no fp8 peak"):
        hw.peak_flops("fp8")
