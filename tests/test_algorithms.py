"""Checks every algorithm in ALGORITHMS gets without a test of its own (docs/contributing.md).

A new algorithm listed in iosim/algorithms/__init__.py is held here, for each pass it models, to
  1. closed form = tile walk, term by term (loopnest.closed_form against tilewalk.walk);
  2. closed form = walk = NumPy executor, through `verify`, where it has an executor;
  3. its declared `kernel_axes`: the Workload fields (and tiling.splits) that `kernels` reads,
     recorded by a Workload whose every attribute read is noted;
  4. sweep = compare: every column of a small grid equals `compare` at that point.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from iosim import verify
from iosim.algorithms import ALGORITHMS, Algorithm
from iosim.algorithms.closedform import closed_form
from iosim.algorithms.tilewalk import walk
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.errors import IosimError
from iosim.execute import EXECUTORS
from iosim.execute.run import passes_of
from iosim.inputs.tiling import Tiling, make_tiling
from iosim.inputs.workload import PASSES, Workload
from iosim.record import field_names

SHAPES = (
    Workload(40, n_kv=56, d=8, heads=4, kv_heads=2, batch=2, causal=True),
    Workload(1, n_kv=70, d=8, heads=4, kv_heads=1),
    Workload(33, d=4, heads=2, sparsity=0.5),
    Workload(40, n_kv=56, d=8, heads=4, kv_heads=2, causal=True, page_size=5),
    Workload(1, n_kv=70, d=8, heads=4, kv_heads=1, page_size=24),
    Workload(1, n_kv=60, d=8, heads=4, kv_heads=2, batch=3, prefix_len=40,
             suffix_lens=(20, 3, 3)),
)
"""Uneven last blocks, GQA, a causal mask with N ≠ N_kv, decoding with packed heads, sparsity,
and a paged KV cache with pages smaller and larger than the 16-row tiles (partial last pages,
tiles straddling pages), and a shared-prefix batch of unequal requests (ragged launches)."""


def _modelled(algorithm: Algorithm, workload: Workload) -> bool:
    try:
        algorithm.kernels(workload, None)
    except IosimError:
        return False
    return True


def _passes(workload: Workload) -> list[Workload]:
    """The workload in each pass it can be (a shared-prefix batch is a forward step only)."""
    out = []
    for p in PASSES:
        try:
            out.append(workload.with_(pass_=p))
        except IosimError:
            continue
    return out


def _cases() -> list[tuple[str, Workload]]:
    return [(name, w) for name, a in ALGORITHMS.items() for shape in SHAPES
            for w in _passes(shape) if _modelled(a, w)]


def _tiling(algorithm: Algorithm, workload: Workload, splits: int | None = None
            ) -> Tiling | None:
    if not algorithm.tiled:
        return None
    tiling = make_tiling(workload, 10**9, "test", block_q=16, block_kv=16, outer=algorithm.outer)
    return algorithm.finish_tiling(tiling, workload, sm_count=108, splits=splits,
                                   blocks_given=True)


@pytest.mark.parametrize(("name", "workload"), _cases(), ids=str)
def test_closed_form_equals_the_walk(name: str, workload: Workload) -> None:
    algorithm = ALGORITHMS[name]
    tiling = _tiling(algorithm, workload, splits=2 if "splits" in algorithm.kernel_axes else None)
    kernels = algorithm.kernels(workload, tiling)
    closed: Counter[tuple[str, str, str]] = Counter()
    for t in closed_form(kernels, workload, tiling):
        closed[(t.kernel, t.tensor, t.op)] += t.bytes
    walked: Counter[tuple[str, str, str]] = Counter()
    for a in walk(kernels, workload, tiling):
        walked[(a.kernel, a.tensor, a.op)] += a.bytes
    assert +closed == +walked


@pytest.mark.parametrize(("name", "workload"), [
    (n, w) for n, w in _cases()
    if all((n, step) in EXECUTORS for step, _ in passes_of(w.pass_))], ids=str)
def test_closed_form_walk_and_executor_agree(name: str, workload: Workload) -> None:
    checked = verify(workload, algorithms=[name], block_q=16, block_kv=16)
    assert checked.ok, [a.name for a in checked.algorithms]


class _Recorder:
    """Notes the attributes `kernels` reads from a Workload or a Tiling."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.on = False

    def workload(self, w: Workload) -> Workload:
        recorder = self

        class Recording(Workload):
            __slots__ = ()

            def __getattribute__(self, name: str) -> Any:
                if recorder.on and not name.startswith("__"):
                    recorder.read.add(name)
                return object.__getattribute__(self, name)

        fields = {f: getattr(w, f) for f in field_names(Workload)}
        return Recording(**fields)

    def tiling(self, t: Tiling | None) -> Tiling | None:
        if t is None:
            return None
        recorder = self

        class Recording(Tiling):
            __slots__ = ()

            def __getattribute__(self, name: str) -> Any:
                if recorder.on and not name.startswith("__"):
                    recorder.read.add("tiling." + name)
                return object.__getattribute__(self, name)

        return Recording(**{f: getattr(t, f) for f in field_names(Tiling)})


DERIVED = {"group_size": {"heads", "kv_heads"}, "element_bytes": {"dtype"},
           "sparsity_fraction": {"sparsity"}, "masked": {"window"}}
# (masked also reads seqlens, the same at every point of a sweep)
"""Workload properties and the fields they are computed from."""
NOT_AXES = {"unfused", "seqlens", "with_", "describe"}
"""Read by kernels but the same at every point of a sweep (unfused, seqlens) or not data."""


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_kernel_axes_are_declared(name: str) -> None:
    algorithm = ALGORITHMS[name]
    recorder = _Recorder()
    for workload in [v.with_(unfused=u) for w in SHAPES for v in _passes(w)
                     for u in ((), ("scale", "mask", "dropout") if v.prefix_len is None
                               else ("scale", "mask"))]:  # a shared prefix runs no dropout
        if not _modelled(algorithm, workload):
            continue
        for splits in (1, 2):
            tiling = _tiling(algorithm, workload, splits=splits if "splits" in
                             algorithm.kernel_axes else None)
            probe, probe_tiling = recorder.workload(workload), recorder.tiling(tiling)
            recorder.on = True
            algorithm.kernels(probe, probe_tiling)
            recorder.on = False
    read: set[str] = set()
    for name_read in recorder.read - NOT_AXES:
        if name_read.startswith("tiling."):
            read.add(name_read.removeprefix("tiling."))
        else:
            read |= DERIVED.get(name_read, {name_read})
    undeclared = read - algorithm.kernel_axes
    assert not undeclared, f"{name}.kernels reads {sorted(undeclared)}: add them to kernel_axes"


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_sweep_equals_compare(name: str) -> None:
    algorithm = ALGORITHMS[name]
    if name == "cascade":
        pytest.skip("shared-prefix batches only (fixed across a grid): tests/test_cascade.py "
                    "holds its one-point sweep to compare")
    passes = tuple(p for p in PASSES if _modelled(algorithm, SHAPES[0].with_(pass_=p)))
    n_kv: tuple[int | None, ...] = (None, 520)
    if not passes:  # self-attention only (iosim's Triton kernels): N_kv = N
        passes = tuple(p for p in PASSES if _modelled(algorithm, Workload(40, d=8, pass_=p)))
        n_kv = (None,)
    spec = SweepSpec(n=(1, 300), n_kv=n_kv, gpu=("a100",), d=(32,), heads=(4,),
                     kv_heads=(None, 2), causal=(False, True), pass_=passes,
                     algorithms=(name,))
    result = sweep(spec)
    grid = result.algorithm(name)
    n, n_kv, kv_heads = (result.axis_values(a) for a in ("n", "n_kv", "kv_heads"))
    causal, passes_at = result.axis_values("causal"), result.axis_values("pass_")
    for i in range(result.points):
        w = Workload(int(n[i]), n_kv=int(n_kv[i]), d=32, heads=4, kv_heads=int(kv_heads[i]),
                     causal=bool(causal[i]), pass_=str(passes_at[i]))  # type: ignore[arg-type]
        a = compare(w, "a100", algorithms=[name]).algorithm(name)
        assert (grid.hbm_bytes[i], grid.flops[i], grid.time_s[i]) == (
            a.hbm_bytes, a.flops, a.time_s), (name, w)
