"""`compare --profile measured` times iosim's Triton MLA prefill kernel by the fitted rule of
estimates/mla_prefill_time.py (configs/gpus/h200.yaml measured.mla_prefill_time), judged here
against the measurements it was fitted on (tests/data/h200-mla-prefill.json "fit", made by
`PYTHONPATH=$PWD python3 benchmarks/mla_prefill_h200.py OUT --set fit` on an H200); bad YAML
values are one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iosim.analysis.compare import compare
from iosim.errors import ConfigError
from iosim.inputs.gpus import config_dir
from iosim.inputs.hardware_yaml import load_hardware
from iosim.inputs.workload import Workload
from tests.conftest import run_cli

RECORD = Path(__file__).parent / "data" / "h200-mla-prefill.json"


def test_compare_is_within_15_percent_of_the_fit_records_kernel_times() -> None:
    points = [p for p in json.loads(RECORD.read_text())["fit"]
              if p["status"] == "ok" and p["impl"] == "triton"]
    assert len(points) == 7
    for p in points:
        w = Workload(p["n"], d=p["d"], d_v=p["d_v"], heads=p["heads"], batch=p["batch"],
                     dtype=p["dtype"], causal=p["causal"])
        est = compare(w, "h200", algorithms=["flash2"], profile="measured",
                      block_q=p["block_m"], block_kv=p["block_n"]).algorithm("flash2")
        assert est.kernels[0].timed_by == "mla-prefill"
        assert abs(est.time_s / p["time_s"] - 1) <= 0.15, p["id"]


def test_it_applies_only_where_it_was_fitted() -> None:
    def timed_by(**kw: Any) -> str:
        w = Workload(2048, d=kw.pop("d", 192), d_v=kw.pop("d_v", 128), heads=8,
                     dtype=kw.pop("dtype", "fp16"))
        return compare(w, "h200", algorithms=["flash2"], profile=kw.pop("profile", "measured"),
                       **{"block_q": 128, "block_kv": 64, **kw}).algorithm("flash2"
                                                                   ).kernels[0].timed_by
    assert timed_by() == "mla-prefill"
    assert timed_by(profile="spec") == "roofline"
    assert timed_by(d=128, d_v=128) == "roofline"
    assert timed_by(block_kv=32) == "roofline"
    assert timed_by(dtype="bf16") == "mla-prefill"


@pytest.mark.parametrize("bad", ["scale: 0.979", "wave_us: 6.58", "launch_us: 12.36"])
def test_a_bad_constant_is_one_line(tmp_path: Any, bad: str) -> None:
    text = (config_dir() / "h200.yaml").read_text()
    name = bad.split(":")[0]
    path = tmp_path / "h.yaml"
    path.write_text(text.replace(bad, f"{name}: -1"))
    with pytest.raises(ConfigError, match=rf"measured\.mla_prefill_time\.{name}"):
        load_hardware(path)
    code, _, err = run_cli("compare", "--gpu", str(path), "--n", "1024", "--d", "192",
                           "--d-v", "128", "--profile", "measured")
    assert code == 2 and f"measured.mla_prefill_time.{name}" in str(err)
    assert len(str(err).strip().splitlines()) == 1 and "Traceback" not in str(err)
