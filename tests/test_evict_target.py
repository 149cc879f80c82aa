"""calibrate/evict_target.py, the loop of the ncu target programs (mla_prefill_target.py,
variants_target.py), on the CPU with CUDA's calls recorded instead of made: each item built and
warmed, then evict, its launch, evict inside the profiler range (calibrate/ncu.py's protocol);
an item that cannot be built left out with its reason; each program's manifest entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from iosim.calibrate import evict_target as ET  # noqa: E402
from iosim.calibrate import kernels as K  # noqa: E402


class _Built:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name, self.events = name, events
        self.rel_error, self.kernels = 1e-4, ["k"]

    def launch(self) -> None:
        self.events.append(f"launch {self.name}")


class _Cudart:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def cudaProfilerStart(self) -> None:
        self.events.append("start")

    def cudaProfilerStop(self) -> None:
        self.events.append("stop")


class _Generator:
    def __init__(self, device: str) -> None:
        assert device == "cuda"

    def manual_seed(self, seed: int) -> _Generator:
        return self


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What CUDA was asked to do, in order (nothing runs on a device)."""
    seen: list[str] = []
    monkeypatch.setattr(K, "evict_buffers", lambda: ("buffer", "partials"))
    monkeypatch.setattr(K, "evict", lambda buffer, partials: seen.append("evict"))
    monkeypatch.setattr(torch.cuda, "cudart", lambda: _Cudart(seen))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: seen.append("sync"))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: seen.append("free"))
    monkeypatch.setattr(torch, "Generator", _Generator)
    return seen


SPEC = [{"count_id": 0, "point": {"id": "a"}}, {"count_id": 1, "point": {"id": "bad"}},
        {"count_id": 2, "point": {"id": "b"}}]
PROFILED = ["sync", "start", "evict", "launch", "evict", "sync", "stop"]
"""After the warm-up launch: the protocol's sequence around the one profiled launch."""


def _expected(free_each: bool) -> list[str]:
    """Items a and b: the warm-up launch, then PROFILED (and the free, where asked)."""
    return [e for n in "ab" for e in (f"launch {n}",
            *(f"launch {n}" if e == "launch" else e for e in PROFILED),
            *(["free"] if free_each else []))]


def _build(events: list[str]) -> Any:
    def build(item: dict[str, Any]) -> _Built:
        if item["point"]["id"] == "bad":
            raise ValueError("no such kernel")
        return _Built(item["point"]["id"], events)
    return build


@pytest.mark.parametrize("free_each", [False, True])
def test_each_item_is_warmed_then_profiled_between_two_evicts(
        events: list[str], free_each: bool, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = ET.profile_each(SPEC, _build(events), lambda item, built: {"id": built.name},
                               "a_target", free_each=free_each)
    assert manifest == [{"id": "a"}, {"id": "b"}]
    assert events == _expected(free_each)
    assert capsys.readouterr().out == "a_target: 1: ValueError: no such kernel\n"


def test_the_two_programs_write_their_manifests(events: list[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """mla_prefill_target frees each point, variants_target keeps its inputs for the next
    item; each manifest entry carries what the program's reader needs (variants_ncu.py,
    benchmarks/mla_prefill_h200.py)."""
    from iosim.calibrate import mla_prefill_target as MPT
    from iosim.calibrate import variants_target as VT

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{**item, "splits": 4} for item in SPEC]))
    build = _build(events)
    monkeypatch.setattr(MPT.VP, "build", lambda point, gen: build({"point": point}))
    assert MPT.main([str(spec), str(tmp_path / "mla.json")]) == 0
    assert json.loads((tmp_path / "mla.json").read_text()) == [
        {"count_id": 0, "id": "a", "rel_error": 1e-4}, {"count_id": 2, "id": "b", "rel_error": 1e-4}]
    assert events == _expected(free_each=True)
    events.clear()
    monkeypatch.setattr(VT, "build", lambda item, cache, gen: build(item))
    assert VT.main([str(spec), str(tmp_path / "variants.json")]) == 0
    assert json.loads((tmp_path / "variants.json").read_text()) == [
        {"count_id": i, "id": n, "splits": 4, "kernels_expected": ["k"], "rel_error": 1e-4}
        for i, n in ((0, "a"), (2, "b"))]
    assert events == _expected(free_each=False)
