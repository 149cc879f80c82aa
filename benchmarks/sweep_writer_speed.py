"""CPU seconds of the streamed writers alone (output/sweep_stream.py) on benchmarks/sweep_bench.py's
1,000,000-point grid, in this process: the sweep is run once, then each writer writes every row
into a sink that only counts characters. `time.process_time` is this process's CPU time, the
figure to compare on a shared machine (docs/sweeps-benchmarks.md).

    python benchmarks/sweep_writer_speed.py            # csv, jsonl and json
    python benchmarks/sweep_writer_speed.py csv        # only that one
"""

from __future__ import annotations

import os
import sys
import time

from sweep_bench import SPEC  # this folder is on sys.path when the script runs

from iosim.analysis.sweep import sweep
from iosim.output import sweep_stream


class Sink:
    """A text stream that keeps nothing but the number of characters written to it."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        return len(text)


def main(formats: list[str]) -> None:
    start = time.process_time()
    result = sweep(SPEC)
    print(f"sweep of {result.points:,} points: {time.process_time() - start:.1f} s CPU "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    for fmt in formats:
        sink = Sink()
        start = time.process_time()
        getattr(sweep_stream, f"write_{fmt}")(result, sink)
        print(f"write_{fmt:<5} {time.process_time() - start:6.1f} s CPU  "
              f"{sink.size / 1e6:8.1f} M characters", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["csv", "jsonl", "json"])
