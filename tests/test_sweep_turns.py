"""Issue 13 item 5: a streamed sweep written by two processes in turn (output/sweep_turns.py)
is byte for byte the file one process writes, in every format and over many chunks; a reader
that goes away, a full disk or a failing second process is an error in the parent (no
traceback, no hang), and the command line says a failed write in one line, status 2."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iosim.analysis.sweep import SweepSpec, sweep
from iosim.output import sweep_stream, sweep_turns

SPEC = SweepSpec(n=(1, 512, 1000, 4096), d=(64, 128), gpu=("a100", "h100"), causal=(False, True),
                 heads=(8,), kv_heads=(2, 8))
FILES = {"csv": sweep_stream.csv_file, "jsonl": sweep_stream.jsonl_file,
         "json": sweep_stream.json_file}

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.mark.parametrize("fmt", FILES)
@pytest.mark.parametrize("chunk", [3, 63])
def test_two_writers_write_the_bytes_of_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            fmt: str, chunk: int) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", chunk)
    result = sweep(SPEC)
    alone = io.StringIO()
    sweep_stream.write(FILES[fmt](result), alone)
    path = tmp_path / f"rows.{fmt}"
    with path.open("w") as stream:
        sweep_turns.write_in_turns(FILES[fmt](result), stream, writers=2)
    assert path.read_text() == alone.getvalue()
    assert FILES[fmt](result).chunks == -(-result.points // chunk) > 1


def test_without_a_descriptor_one_process_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", 3)
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    result = sweep(SPEC)
    out = io.StringIO()  # no fileno: as click's test runner
    sweep_turns.write_in_turns(sweep_stream.csv_file(result), out, writers=2)
    alone = io.StringIO()
    sweep_stream.write_csv(result, alone)
    assert out.getvalue() == alone.getvalue()


@pytest.mark.parametrize(("cores", "idle", "writers"), [
    (1, 1.0, 1), (2, 2.0, 2), (2, 1.6, 2), (2, 1.4, 1), (2, 0.1, 1), (8, 3.0, 2)])
def test_two_writers_only_where_a_second_core_is_idle(monkeypatch: pytest.MonkeyPatch,
                                                      cores: int, idle: float,
                                                      writers: int) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(sweep_turns, "idle_cores", lambda cpus, seconds: idle)
    monkeypatch.setattr(os, "getloadavg", lambda: pytest.fail("the load average was read"))
    assert sweep_turns.writers_here() == writers


@pytest.mark.parametrize(("load", "writers"), [(0.2, 2), (1.4, 2), (1.6, 1), (6.0, 1)])
def test_without_proc_stat_the_load_average_decides(monkeypatch: pytest.MonkeyPatch,
                                                    load: float, writers: int) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(sweep_turns, "_cpu_ticks", lambda cpus: {})
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert sweep_turns.writers_here() == writers


def test_idle_cores_reads_the_ticks_of_the_allowed_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two readings of /proc/stat: core 0 idle 8 of 10 ticks, core 1 idle 2 of 10, core 2 (not
    this process's) all idle: 0.8 + 0.2 cores idle."""
    readings = iter([{0: (100, 1000), 1: (50, 1000)}, {0: (108, 1010), 1: (52, 1010)}])
    monkeypatch.setattr(sweep_turns, "_cpu_ticks", lambda cpus: next(readings))
    monkeypatch.setattr(sweep_turns.time, "sleep", lambda s: None)
    assert sweep_turns.idle_cores({0, 1}, 0.1) == pytest.approx(1.0)


def test_cpu_ticks_reads_this_machines_proc_stat() -> None:
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here")
    ticks = sweep_turns._cpu_ticks(set(os.sched_getaffinity(0)))
    assert ticks and all(0 <= idle <= total for idle, total in ticks.values())


def test_a_reader_that_goes_away_is_a_broken_pipe(monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", 2)
    result = sweep(SPEC)
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w", buffering=1)
    with pytest.raises(BrokenPipeError):
        sweep_turns.write_in_turns(sweep_stream.csv_file(result), stream, writers=2)
    stream.close()  # a CSV has no head: nothing was left in the stream's buffer
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_the_parents_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", 2)
    result = sweep(SPEC)
    with open("/dev/full", "w") as stream, pytest.raises(OSError) as caught:
        sweep_turns.write_in_turns(sweep_stream.csv_file(result), stream, writers=2)
        stream.flush()
    assert caught.value.errno == 28  # ENOSPC


def test_a_failing_second_writer_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setattr(sweep_stream, "CHUNK_POINTS", 2)
    file = sweep_stream.csv_file(sweep(SPEC))

    def chunk(index: int) -> list[str]:
        if index == 3:
            raise ZeroDivisionError("a bug in the child's chunk")
        return file.chunk(index)

    broken = sweep_stream.StreamedFile(file.head, file.chunks, chunk, file.tail)
    with (tmp_path / "rows.csv").open("w") as stream, pytest.raises(ChildProcessError):
        sweep_turns.write_in_turns(broken, stream, writers=2)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("points", ["--n 512,1024", "--n 512..10240:512 --heads 1..40"])
def test_the_command_says_a_failed_write_in_one_line(points: str) -> None:
    """One chunk (written by this process) and 20,000 points (two processes where a second
    core is idle; test_a_full_disk_is_the_parents_error forces them): before, a traceback
    ending in `OSError: [Errno 28] No space left on device`."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "iosim", "sweep", "--gpu", "a100", *points.split(),
                               "--format", "csv"], stdout=full, stderr=subprocess.PIPE,
                              text=True, check=False)
    assert done.returncode == 2
    assert done.stderr == ("Error: cannot write the sweep's csv to the output: "
                           "No space left on device\n")
