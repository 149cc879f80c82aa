"""Start-up cost of `iosim compare`, against the libraries it cannot do without.

Issue 9's acceptance: a fresh `iosim compare --n 4096 --gpu a100` process takes at most 1.6× a
fresh `python -c "import numpy, yaml, rich"` process. Both are measured side by side in one run,
alternating, so that the machine's load affects them alike; the medians are compared, of the
wall-clock time (what the acceptance asks) and of the CPU time (user + system of the child
process, which other jobs on a shared machine disturb less).
Run from the repository root, with iosim installed (pip install -e .), or with PYTHONPATH=.
where numpy, yaml, rich and click are installed but iosim is not:

    python benchmarks/import_speed.py [--runs 15] [--terminal] [--as-is] [--no-yaml-cache]

Bytecode. A user's install has bytecode for every module (pip compiles it when it installs a
wheel), so by default both processes read theirs from a fresh bytecode cache
(PYTHONPYCACHEPREFIX, a temporary folder; the warm-up run fills it) and the repository is left
as it is. `--as-is` runs them in the environment as it is instead: where PYTHONDONTWRITEBYTECODE
is set (as on the development machine) an editable checkout's modules are compiled from source
in every run while site-packages keep their bytecode, which charges iosim alone for compiling.

The shipped YAMLs' parse cache. A user's second `iosim compare` finds the GPU and
implementation YAMLs it reads already parsed (iosim/inputs/yaml_cache.py) and imports no PyYAML,
so by default both processes get a fresh cache folder (IOSIM_CACHE_DIR, a temporary folder that
the warm-up run fills). `--no-yaml-cache` turns the cache off: every run parses the YAMLs, as a
first run does.

It also checks that `import iosim` loads no executor, sweep or plotting module, nor pandas or
matplotlib (the package exposes its API lazily).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def timed(command: list[str], env: dict[str, str], terminal: bool = False
          ) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process running `command`, its output to
    /dev/null or, with `terminal`, to an 80-column pseudo-terminal read to its end (what a user
    at a terminal sees: iosim then draws its tables with rich, styles and all)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if terminal:
        run_on_terminal(command, env)
    else:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_on_terminal(command: list[str], env: dict[str, str]) -> None:
    """`command` with its stdout on a new 80 × 24 pseudo-terminal, drained as it writes."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL,
                            env={**env, "COLUMNS": "80"})
    os.close(follower)
    try:
        while True:
            try:
                if not os.read(leader, 65536):
                    break
            except OSError:  # EIO: the child closed the terminal
                break
    finally:
        os.close(leader)
    if proc.wait() != 0:
        raise subprocess.CalledProcessError(proc.returncode, command)


def heavy_modules_loaded_by_import(env: dict[str, str]) -> list[str]:
    code = ("import sys, iosim; print('\\n'.join(m for m in sys.modules if m.startswith("
            f"{HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=env)
    return out.stdout.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each (at least 15)")
    parser.add_argument("--terminal", action="store_true",
                        help="both processes write to an 80-column pseudo-terminal instead of "
                             "/dev/null (compare then draws with rich, as at a user's terminal)")
    parser.add_argument("--as-is", action="store_true",
                        help="keep the environment's bytecode settings (see the module doc)")
    parser.add_argument("--no-yaml-cache", action="store_true",
                        help="run compare without the shipped YAMLs' parse cache (a first run)")
    options = parser.parse_args()
    runs = max(15, options.runs)
    env = dict(os.environ)
    cache = None
    if not options.as_is:
        cache = tempfile.TemporaryDirectory(prefix="iosim-pycache-")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache.name
    yaml_cache = tempfile.TemporaryDirectory(prefix="iosim-yaml-cache-")
    env["IOSIM_CACHE_DIR"] = "" if options.no_yaml_cache else yaml_cache.name
    compare = [*iosim_command(), "compare", "--n", "4096", "--gpu", "a100"]
    libraries = [sys.executable, "-c", "import numpy, yaml, rich"]
    terminal = options.terminal
    # warm the file cache (and fill the bytecode)
    timed(compare, env, terminal), timed(libraries, env, terminal)
    times: dict[str, list[tuple[float, float]]] = {"compare": [], "libraries": []}
    for _ in range(runs):
        times["compare"].append(timed(compare, env, terminal))
        times["libraries"].append(timed(libraries, env, terminal))
    wall = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
    cpu = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
    ratio = wall["compare"] / wall["libraries"]
    mode = "environment as it is" if options.as_is else "bytecode for every module"
    mode += "; no YAML cache" if options.no_yaml_cache else "; YAML parse cache filled"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    sink = "an 80-column pseudo-terminal" if terminal else "/dev/null"
    print(f"{mode}; output to {sink}; {runs} runs of each, alternating; load average {load:.1f}")
    print(f"iosim compare --n 4096 --gpu a100   median {wall['compare'] * 1e3:6.1f} ms wall, "
          f"{cpu['compare'] * 1e3:6.1f} ms CPU")
    print(f"python -c 'import numpy, yaml, rich' median {wall['libraries'] * 1e3:6.1f} ms wall, "
          f"{cpu['libraries'] * 1e3:6.1f} ms CPU")
    print(f"ratio {ratio:.2f} wall, {cpu['compare'] / cpu['libraries']:.2f} CPU "
          f"(target ≤ {TARGET_RATIO})")
    heavy = heavy_modules_loaded_by_import(env)
    print("import iosim loads: " + (", ".join(heavy) if heavy else "none of " + ", ".join(HEAVY)))
    if cache is not None:
        cache.cleanup()
    yaml_cache.cleanup()
    return 0 if ratio <= TARGET_RATIO and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
