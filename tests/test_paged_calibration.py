"""A paged KV cache's transaction efficiency comes from the GPU YAML's measured section, never a
guess (issue 14 item 2): listed, interpolated, outside the range, absent, malformed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from iosim import Workload
from iosim.analysis.compare import compare
from iosim.errors import IosimError
from iosim.estimates.paged_dram import page_efficiency
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware_yaml import load_hardware

H200 = Path(resolve_hardware("h200").hardware.path)
TABLE = {1: 0.25, 16: 0.75, 256: 1.0}
"""Made-up factors: these tests hold the plumbing, not a measurement."""


def _gpu(tmp_path: Path, paged: object) -> Path:
    raw = yaml.safe_load(H200.read_text())
    raw["measured"]["paged_kv_efficiency"] = paged
    raw["name"] = "h200-paged-test"
    raw.pop("aliases", None)
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_listed_interpolated_and_outside(tmp_path: Path) -> None:
    hw = load_hardware(_gpu(tmp_path, {"source": "test", "by_page_size": TABLE}))
    assert page_efficiency(hw, 16).factor == 0.75
    assert page_efficiency(hw, 4).factor == pytest.approx(0.25 + 0.5 * 0.5)  # log2 4 halfway
    assert "interpolated" in page_efficiency(hw, 4).note
    assert page_efficiency(hw, 512).factor is None
    assert "not calibrated" in page_efficiency(resolve_hardware("h100").hardware, 16).note


def test_the_measured_profile_charges_k_and_v_at_the_factor(tmp_path: Path) -> None:
    path = _gpu(tmp_path, {"source": "test", "by_page_size": TABLE})
    w = Workload(1, n_kv=65536, heads=32, kv_heads=8, d=128, batch=8)
    plain = compare(w, str(path), algorithms=["splitkv"], splits=4, profile="measured")
    paged = compare(w.with_(page_size=1), str(path), algorithms=["splitkv"], splits=4,
                    profile="measured")
    kernel = {k.name: k for k in paged.algorithms[-1].kernels}["splitkv_attn"]
    before = {k.name: k for k in plain.algorithms[-1].kernels}["splitkv_attn"]
    # memory-bound: K, V dominate, so the time grows by close to 1/0.25
    assert kernel.time_s / before.time_s == pytest.approx(4.0, rel=0.02)
    assert paged.paging is not None and paged.paging.factor == 0.25


@pytest.mark.parametrize(("paged", "words"), [
    ({"by_page_size": TABLE}, "source"),
    ({"source": "x", "by_page_size": {0: 0.5}}, "page size"),
    ({"source": "x", "by_page_size": {16: 2.0}}, "(0, 1.5]"),
    ({"source": "x", "by_page_size": {16: 0.5}, "fit": 1}, "unknown key"),
])
def test_a_malformed_key_is_refused(tmp_path: Path, paged: object, words: str) -> None:
    with pytest.raises(IosimError, match="paged_kv_efficiency") as info:
        load_hardware(_gpu(tmp_path, paged))
    assert words in str(info.value)
