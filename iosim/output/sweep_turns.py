"""A streamed sweep file written by two processes taking turns, where the machine has the cores.

Writing a million-point sweep as JSON is CPU work on its text (output/text_columns.py), one
chunk at a time, each chunk independent of the others. So on Linux, with at least two cores
this process may run on, one of them idle, and the output a file descriptor (a file or a
pipe), the process forks once: parent and child each make every other chunk, and they write
them in turn, each waiting for the other's token before writing its next chunk (a pipe each
way), so the bytes are those of one process writing every chunk in order. Each holds at most
one chunk's text (tens of MB); the sweep's arrays are shared by the fork, not copied.

Anywhere else (one core, all cores busy, no fork, an output without a descriptor such as a
test's StringIO, a file of one chunk) `sweep_stream.write` writes it alone, the same bytes.

Errors: a process that cannot write (a closed pipe, a full disk) stops; the other sees its
token pipe end and stops too, and the parent raises the child's error as its own
(BrokenPipeError where the reader went away: the command line then exits as it does then).
"""

from __future__ import annotations

import errno
import os
import sys
import time
import traceback
from typing import IO

from iosim.output.sweep_stream import StreamedFile, write

TOKEN = b"t"
"""What one process sends the other when its chunk is written: your turn."""

FAILED = 250
"""A child's exit status when it failed by something other than an OSError (whose errno it
exits with)."""

TURN_LOST = 251
"""A child's exit status when the parent stopped before passing it the turn."""


IDLE_SAMPLE_S = 0.1
"""How long writers_here watches the cores' idle time: ten 10 ms clock ticks per core."""


def writers_here() -> int:
    """How many processes write: 2 where this process may run on two cores or more, can fork
    (Linux) and a second core is idle, else 1. On a machine whose cores are all busy, a second
    writer only shares them: measured on the 2-core development machine at loads of 2.6 to 6,
    two writers took about 15 % more CPU time and no less wall time
    (docs/sweeps-benchmarks.md). The bytes are the same either way.

    "Idle" is what the cores this process may use did over the last IDLE_SAMPLE_S (/proc/stat)
    while it waited: at least 1.5 of them idle (one for each writer, with half a core's slack).
    Not the 1-minute load average, which a sweep just run — this command's own computing, or
    the previous command's two writers — holds above the threshold for a minute after the
    cores are free again. Without /proc/stat, the load average below the cores less a half."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return 1
    try:
        cpus = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = set(range(os.cpu_count() or 1))
    if len(cpus) < 2:
        return 1
    idle = idle_cores(cpus, IDLE_SAMPLE_S)
    if idle is not None:
        return 2 if idle >= 1.5 else 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return 2 if load < len(cpus) - 0.5 else 1


def idle_cores(cpus: set[int], seconds: float) -> float | None:
    """Cores of `cpus` idle over the next `seconds` (idle + iowait ticks ÷ all ticks, per core,
    summed), or None where /proc/stat cannot be read or shows none of them."""
    before = _cpu_ticks(cpus)
    if not before:
        return None
    time.sleep(seconds)
    after = _cpu_ticks(cpus)
    idle = 0.0
    for cpu, (idle_then, total_then) in before.items():
        idle_now, total_now = after.get(cpu, (idle_then, total_then))
        if total_now > total_then:
            idle += (idle_now - idle_then) / (total_now - total_then)
    return idle


def _cpu_ticks(cpus: set[int]) -> dict[int, tuple[int, int]]:
    """(idle + iowait, all) clock ticks of each core in `cpus` so far ({} without /proc/stat)."""
    ticks = {}
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            for line in stat:
                name, _, rest = line.partition(" ")
                if not (name.startswith("cpu") and name[3:].isdigit()):
                    continue
                if int(name[3:]) in cpus:
                    values = [int(v) for v in rest.split()[:8]]
                    ticks[int(name[3:])] = (values[3] + values[4], sum(values))
    except (OSError, ValueError, IndexError):
        return {}
    return ticks


def _descriptor(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return None


def write_in_turns(file: StreamedFile, stream: IO[str], writers: int | None = None) -> None:
    """Write `file` to `stream`: by two processes in turn where `writers` (default
    writers_here()) is 2 or more, the stream has a descriptor and the file two chunks or more;
    else by this process alone."""
    fd = _descriptor(stream)
    if fd is None or file.chunks < 2 or (writers_here() if writers is None else writers) < 2:
        write(file, stream)
        return
    stream.write(file.head)
    stream.flush()
    sys.stderr.flush()  # nothing buffered is written twice after the fork
    to_child = os.pipe()  # (read, write): the turn passed to the child
    to_parent = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: chunks 1, 3, 5, ...
        os.close(to_child[1])
        os.close(to_parent[0])
        status = 0
        try:
            _take_turns(file, fd, 1, to_child[0], to_parent[1])
        except _TurnLost:
            status = TURN_LOST  # the parent stopped first, and knows why
        except OSError as exc:
            status = exc.errno or FAILED
        except KeyboardInterrupt:
            status = FAILED
        except BaseException:  # a bug: said on stderr, as the parent would
            traceback.print_exc()
            status = FAILED
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(to_child[0])
    os.close(to_parent[1])
    try:
        _take_turns(file, fd, 0, to_parent[0], to_child[1])
    except _TurnLost:
        pass  # the child stopped: its status says why
    finally:
        os.close(to_parent[0])
        os.close(to_child[1])  # a child waiting for its turn sees the end, and stops
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status == errno.EPIPE:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
    if status in (FAILED, TURN_LOST) or status < 0:
        raise ChildProcessError(f"the sweep's second writer process failed (status {status})")
    if status:
        raise OSError(status, os.strerror(status))
    stream.write(file.tail)


class _TurnLost(Exception):
    """The other process ended before passing the turn."""


def _take_turns(file: StreamedFile, fd: int, first: int, turn_in: int, turn_out: int) -> None:
    """Make chunks first, first + 2, ... and write each when it is this process's turn (chunk 0
    needs none); pass the turn on after each."""
    for index in range(first, file.chunks, 2):
        parts = file.chunk(index)
        if index > 0 and os.read(turn_in, 1) != TOKEN:
            raise _TurnLost
        for part in parts:  # a MB or so each: encoded one at a time, the buffer reused
            _write_all(fd, part.encode())
        if index + 1 < file.chunks:
            os.write(turn_out, TOKEN)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["idle_cores", "write_in_turns", "writers_here"]
