"""Fit each implementation's time terms on the fit records (no GPU needed); print or write them.

    python benchmarks/impl_fit.py tests/data/h200-impl-fit.json tests/data/h200-impl-fit2.json \\
        tests/data/h200-impl-validation.json [--write]
    python benchmarks/impl_fit.py points.jsonl      # what `iosim measure --record` appended

The fit itself is iosim/calibrate/impl_fit.py (one home). The per-program bandwidth is the
stream probe's (tests/data/h200-sm-bandwidth.json), a measured input. `--write` replaces the
`calibration.<gpu>` forward entries of configs/impls/NAME.yaml (efficiency, call_overhead_s,
solo_rate, program_bandwidth, host floors, source; a `backward:` entry is kept).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from iosim.calibrate.impl_fit import fit_record, merged_records, program_bandwidth
from iosim.inputs.gpus import resolve_hardware

PROBE = Path(__file__).parents[1] / "tests" / "data" / "h200-sm-bandwidth.json"
IMPLS = Path(__file__).parents[1] / "configs" / "impls"
ORDER = ("solo_rate", "program_bandwidth", "call_overhead_s", "host_floor_s",
         "decode_host_floor_s")


def _yaml_number(value: float) -> str:
    """4 significant digits, as YAML reads a float (a mantissa with a point: 9.0e-05)."""
    text = f"{value:.4g}"
    if "e" in text and "." not in text.split("e")[0]:
        text = text.replace("e", ".0e")
    return text


def block(gpu: str, fitted: dict[str, Any], bandwidth: float | None, source: str) -> str:
    """The `calibration.<gpu>` forward lines of a profile."""
    effs = ", ".join(f"{k}: {v:g}" for k, v in fitted["efficiency"].items())
    lines = [f"  {gpu}:", f"    efficiency: {{{effs}}}"]
    values = {**fitted, **({"program_bandwidth": bandwidth} if bandwidth else {})}
    lines += [f"    {k}: {_yaml_number(values[k])}" for k in ORDER if values.get(k)]  # 0: none
    lines.append(f'    source: "{source}"')
    return "\n".join(lines) + "\n"


def write(name: str, text: str, gpu: str) -> None:
    """Replace the profile's forward calibration lines for `gpu`, keeping a backward entry."""
    path = IMPLS / f"{name}.yaml"
    old = path.read_text()
    at = old.index(f"\n  {gpu}:\n") + 1
    rest = old[at:].splitlines(keepends=True)[1:]
    keep = [line for line in rest if line.startswith("    backward:")]
    end = next((i for i, line in enumerate(rest) if not line.startswith("    ")), len(rest))
    path.write_text(old[:at] + text + "".join(keep) + "".join(rest[end:]))


def main() -> None:
    paths = [Path(a) for a in sys.argv[1:] if not a.startswith("--")]
    record = merged_records(paths)
    gpu = record["device"]["name"].split()[-1].lower()
    hardware = resolve_hardware(gpu).hardware
    bandwidth = program_bandwidth(json.loads(PROBE.read_text()))
    names = ", ".join(str(p) for p in paths)
    for impl, fitted in fit_record(record, hardware, bandwidth).items():
        source = (f"fitted by benchmarks/impl_fit.py on {names} ({fitted['points']} points, "
                  f"torch {record['device']['torch']}); per-program bandwidth from "
                  f"tests/data/h200-sm-bandwidth.json; judged on "
                  f"tests/data/h200-impl-validation2.json")
        text = block(gpu, fitted, bandwidth.get(impl), source)
        print(f"# {impl}: {fitted['points']} points\n{text}")
        if "--write" in sys.argv:
            write(impl, text, gpu)
    if "--write" in sys.argv:
        print("written: configs/impls/*.yaml")

if __name__ == "__main__":
    main()
