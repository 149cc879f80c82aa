"""tools/fit_paged_kv.py on a small record in the schema of benchmarks/variants_h200.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import fit_paged_kv


def _record(tmp_path: Path) -> Path:
    rows = []
    for shape, slow in (("page-a", 1.0), ("page-b", 1.2), ("page-c", 1.1)):
        rows.append({"id": f"{shape}-pcontig", "page_size": None, "status": "ok",
                     "best_time_s": 1e-5})
        for page, factor in ((1, 0.2), (16, 0.8)):
            rows.append({"id": f"{shape}-p{page}", "page_size": page, "status": "ok",
                         "best_time_s": 1e-5 / (factor / slow)})
    rows.append({"id": "page-d-p16", "page_size": 16, "status": "failed: oom"})
    path = tmp_path / "variants.json"
    path.write_text(json.dumps({"schema": "iosim/h200-variants/1", "paged": rows}))
    return path


def test_efficiency_is_contiguous_over_paged_time_median_over_the_fit(tmp_path: Path) -> None:
    measured = fit_paged_kv.efficiencies(json.loads(_record(tmp_path).read_text()))
    assert sorted(measured) == ["page-a", "page-b", "page-c"]
    assert measured["page-b"][16] == pytest.approx(0.8 / 1.2)
    factors = fit_paged_kv.fit(measured, ["page-a", "page-b", "page-c"])
    assert factors[1] == pytest.approx(0.2 / 1.1)  # the median of 0.2/1, 0.2/1.2, 0.2/1.1


def test_the_yaml_block_loads_as_the_gpu_key(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert fit_paged_kv.main([str(_record(tmp_path)), "--fit", "page-a", "--yaml"]) == 0
    out = capsys.readouterr().out
    assert "judged on page-b, page-c" in out and "by_page_size: {1: 0.200, 16: 0.800}" in out


def test_a_record_without_paged_rows_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert fit_paged_kv.main([str(empty)]) == 2
