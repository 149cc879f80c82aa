"""Speed of `iosim verify --n 1024 --d 64` (standard, flash1 and flash2, float64, 64×64 blocks),
forward and forward + backward (`--pass fwdbwd`: the three backward executors too).

Target (issue 4): under 5 s. Run from the repository root, with iosim installed:

    python benchmarks/verify_speed.py

Times each whole command as a user runs it (a fresh process: interpreter start, imports, the
executors, closed form, walk, rendering), best of 3, then the same verification in-process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from iosim.analysis.verify import verify
from iosim.inputs.workload import Workload

TARGET_S = 5.0
REPEATS = 3
PASSES = ("fwd", "fwdbwd")


def main() -> int:
    exe = shutil.which("iosim")
    worst = 0.0
    for pass_ in PASSES:
        command = ["verify", "--n", "1024", "--d", "64"] + (["--pass", pass_] if pass_ != "fwd" else [])
        cmd = [exe, *command] if exe else [sys.executable, "-m", "iosim", *command]
        wall = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            wall.append(time.perf_counter() - start)
        inproc = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            result = verify(Workload(1024, d=64, pass_=pass_))  # type: ignore[arg-type]
            inproc.append(time.perf_counter() - start)
            assert result.ok
        worst = max(worst, min(wall))
        print(f"iosim {' '.join(command)}: {min(wall):.2f} s (whole command, best of {REPEATS}); "
              f"verify() in-process {min(inproc):.2f} s")
    verdict = "within" if worst < TARGET_S else "OVER"
    print(f"{verdict} the {TARGET_S:g} s target")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
