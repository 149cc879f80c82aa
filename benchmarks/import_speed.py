"""Start-up cost of `iosim compare`, against the libraries it cannot do without.

Issue 9's acceptance: a fresh `iosim compare --n 4096 --gpu a100` process takes at most 1.6× a
fresh `python -c "import numpy, yaml, rich"` process. Both are measured side by side in one run,
alternating, so that the machine's load affects them alike; the medians are compared.
Run from the repository root, with iosim installed (pip install -e .), or with PYTHONPATH=.
where numpy, yaml, rich and click are installed but iosim is not:

    python benchmarks/import_speed.py [--runs 15]

It also checks that `import iosim` loads no executor, sweep or plotting module, nor pandas or
matplotlib (the package exposes its API lazily).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_RATIO = 1.6
HEAVY = ("iosim.execute", "iosim.analysis.sweep", "iosim.analysis.verify", "iosim.output.plot",
         "pandas", "matplotlib")


def iosim_command() -> list[str]:
    """The installed console script; `python -m iosim` where there is none (PYTHONPATH=.)."""
    script = Path(sys.executable).with_name("iosim")
    found = str(script) if script.exists() else shutil.which("iosim")
    return [found] if found else [sys.executable, "-m", "iosim"]


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=os.environ)
    return time.perf_counter() - start


def heavy_modules_loaded_by_import() -> list[str]:
    code = ("import sys, iosim; print('\\n'.join(m for m in sys.modules if m.startswith("
            f"{HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each (at least 15)")
    runs = max(15, parser.parse_args().runs)
    compare = [*iosim_command(), "compare", "--n", "4096", "--gpu", "a100"]
    libraries = [sys.executable, "-c", "import numpy, yaml, rich"]
    seconds(compare), seconds(libraries)  # warm the file cache and the bytecode
    times: dict[str, list[float]] = {"compare": [], "libraries": []}
    for _ in range(runs):
        times["compare"].append(seconds(compare))
        times["libraries"].append(seconds(libraries))
    ours, theirs = (statistics.median(times[k]) for k in ("compare", "libraries"))
    ratio = ours / theirs
    print(f"iosim compare --n 4096 --gpu a100   median {ours * 1e3:6.1f} ms ({runs} runs)")
    print(f"python -c 'import numpy, yaml, rich' median {theirs * 1e3:6.1f} ms ({runs} runs)")
    print(f"ratio {ratio:.2f} (target ≤ {TARGET_RATIO})")
    heavy = heavy_modules_loaded_by_import()
    print("import iosim loads: " + (", ".join(heavy) if heavy else "none of " + ", ".join(HEAVY)))
    return 0 if ratio <= TARGET_RATIO and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
