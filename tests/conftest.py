"""Shared test setup."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, settings
from rich.console import Console

matplotlib.use("Agg")

# Without an NVIDIA GPU the Triton kernels run under Triton's interpreter; the variable must be
# set before triton is first imported (its own jit functions are decorated at import).
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

# The shipped YAMLs' parse cache (inputs/yaml_cache.py) lives in a folder of this test run, not
# in the developer's ~/.cache: every run starts from an empty one, and leaves nothing behind.
_YAML_CACHE = tempfile.TemporaryDirectory(prefix="iosim-test-yaml-cache-")
os.environ["IOSIM_CACHE_DIR"] = _YAML_CACHE.name

DATA = Path(__file__).parent / "data"
SEED_ACCELERATOR = DATA / "seed-accelerator.yaml"


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendered output must not depend on the developer's terminal."""
    for name in ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "unknown")


def render_plain(renderable: object, width: int = 110) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


class CliOutcome:
    """What one `iosim` invocation did: unpacks as (exit_code, stdout, stderr)."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.exit_code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr
        self.output = result.output

    def __iter__(self) -> Iterator[object]:
        return iter((self.exit_code, self.stdout, self.stderr))


def run_cli(*args: str) -> CliOutcome:
    """Run `iosim ARGS...` in-process through click's CliRunner (the one CLI helper of the tests)."""
    from iosim.cli import cli

    return CliOutcome(CliRunner().invoke(cli, list(args)))


@pytest.fixture
def iosim_cli() -> Callable[..., CliOutcome]:
    """`iosim_cli("compare", "--n", "64", ...)` → CliOutcome (exit_code, stdout, stderr)."""
    return run_cli


def markdown_table(text: str, header: str) -> list[list[str]]:
    """The body rows (cells stripped) of the markdown table in `text` whose header line starts
    with `header`: the lines after its separator, up to the first that is not a table row."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


@contextlib.contextmanager
def without_prefix_rereads() -> Iterator[None]:
    """The DRAM estimate as it stood before issue 14's var10 (estimates/prefix_waves.py: the
    shared prefix re-read by later waves): the model the var8 and var9 reports' "shipped"
    columns were written from, which those reports' tests hold them to."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("iosim.estimates.l2.prefix_rereads", lambda terms, *_: tuple(terms))
        yield


@contextlib.contextmanager
def as_var11_shipped() -> Iterator[None]:
    """The decoding model as var11 shipped it: split-KV's DRAM estimate at the tiling's programs
    per SM (10 at d 64), its time at Tiles.programs_per_sm's (9), the paged kernel not apart
    (var12 put the compiled paged kernel's 8 in both: analysis/decode_time.py)."""
    from iosim.analysis.decode_time import DecodeCounts

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DecodeCounts, "_at_split_occupancy", lambda self, algorithm, est: est)
        patch.setattr(DecodeCounts, "split_per_sm",
                      property(lambda self: self.tiles.per_sm(self.workload.d)))
        yield


@contextlib.contextmanager
def as_var10_shipped() -> Iterator[None]:
    """The DRAM estimate as var10 shipped it: every partition's copy of a prefix chunk whole in
    a wave's reuse distance (estimates/prefix_waves.py FAR_COPY_SHARE 1.0; var11 fitted it),
    at var11's occupancy (as_var11_shipped), the model the var10 report's "on" columns were
    written from."""
    with pytest.MonkeyPatch.context() as patch, as_var11_shipped():
        patch.setattr("iosim.estimates.prefix_waves.FAR_COPY_SHARE", 1.0)
        yield


@contextlib.contextmanager
def as_var12_shipped() -> Iterator[None]:
    """The DRAM estimate as var12 shipped it: the wave rule (estimates/prefix_waves.py) over
    packed grids only, MHA's unpacked grid left at prefix_once's one read (var13 took it in)."""
    import iosim.estimates.prefix_waves as waves

    full = waves.prefix_grid

    def packed_only(kernels: Any, workload: Any, tiling: Any, concurrent: int) -> Any:
        split = next((k for k in kernels if k.name == waves.SPLITKV_KERNEL and k.split), None)
        return full(kernels, workload, tiling, concurrent) if split and split.pack_heads else None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(waves, "prefix_grid", packed_only)
        yield


# Hypothesis profiles: `ci`, the default under `pytest -q` (what CI and the README run), keeps
# the README's test command under two minutes on a 2-core machine: a property test gets half the
# examples it asks for (`examples` below), and the fuzz suite (tests/test_fuzz.py) scales its
# properties from max_examples (docs/input-limits.md); `thorough` (HYPOTHESIS_PROFILE=thorough)
# runs about sixteen times as many. Deadlines are off in both: the CI machine is shared.
CI_EXAMPLES = 30
settings.register_profile("ci", max_examples=CI_EXAMPLES, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def examples(count: int) -> int:
    """A test's number of examples: `count` scaled by the profile (half under `ci`, about eight
    times under `thorough`), at least 1."""
    return max(1, count * settings.default.max_examples // (2 * CI_EXAMPLES))


# The `slow` marker: exhaustive versions of checks whose sampled version runs by default. The
# README's `pytest -q` leaves them out (reported as deselected) to stay well under two minutes on
# a 2-core machine; `pytest -m slow` runs them, as .ci/run does in a step after the README's, and
# any explicit -m expression decides for itself.
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
