"""Fit the decoding time model's three constants (analysis/decode_time.py: the ramp t_ramp, the
memory efficiency η and a program's time per key block t_block) on seen sets of the H200 record.

    python benchmarks/decode_fit_h200.py [RECORD] [--decode SECTIONS] [--cascade SECTIONS]

RECORD defaults to tests/data/h200-variants.json. Points: every timed split count of the decode
shapes of the --decode sections (default decode,decode_judge,decode_fresh) and both methods of
the shared-prefix batches of the --cascade sections (default cascade,cascade_judge,
cascade_fresh,cascade_fresh2) at their measured fastest split counts. The objective weighs the
two kinds alike: the mean over decode shapes of each shape's mean squared log error, plus the
mean squared log error of the shared-prefix times. A grid over ramp 0..8 µs by 0.25, η
0.90..1.12 by 0.02 (1.12: the spec sheet's 4.8 TB/s over the measured copy rate) and t_block
0.6..2.0 µs by 0.05; the counts are made once (compare at each
point's split counts, measured.decode_fit left out), the grid is arithmetic on them. Prints the
constants for configs/gpus/h200.yaml's measured.decode_fit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from iosim import Workload
from iosim.analysis.decode_time import MEASURED_TILES, DecodeCounts, Tiles, Timed, ceilings
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.record import replace

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
DECODE = ("decode", "decode_judge", "decode_fresh")
CASCADE = ("cascade", "cascade_judge", "cascade_fresh", "cascade_fresh2")


def unfitted_h200() -> Hardware:
    """The shipped H200 without measured.decode_fit (the counts do not depend on it)."""
    hw = resolve_hardware("h200").hardware
    assert hw.measured is not None
    return replace(hw, measured=replace(hw.measured, decode_fit=None))


def record_tiles(record: dict[str, Any]) -> Tiles:
    """The measured kernels' tiles (the record's decode_config)."""
    config = record["decode_config"]
    return Tiles(config["block_r"], config.get("prefix_block_r", 64), config["block_n"],
                 MEASURED_TILES.programs_per_sm)


def decode_workload(d: dict[str, Any]) -> Workload:
    """A decode shape of the record."""
    return Workload(1, n_kv=d["n_kv"], d=d["d"], heads=d["heads"], kv_heads=d["kv_heads"],
                    batch=d["batch"], page_size=d.get("page_size"))


def batch_workload(c: dict[str, Any]) -> Workload:
    """A shared-prefix batch of the record."""
    suffixes = tuple(c["suffix_lens"])
    return Workload(1, n_kv=c["prefix_len"] + max(suffixes), d=c["d"], heads=c["heads"],
                    kv_heads=c["kv_heads"], batch=c["batch"], prefix_len=c["prefix_len"],
                    suffix_lens=suffixes)


class Terms:
    """The model's terms of many Timed, as arrays (points × kernels), at η = 1 and no ramp."""

    def __init__(self, timed: list[Timed]) -> None:
        width = max(len(t.kernels) for t in timed)
        shape = (len(timed), width)
        self.kernels = np.zeros(len(timed))
        self.memory = np.zeros(shape)
        self.compute = np.zeros(shape)
        self.chain = np.zeros(shape)
        """waves × blocks per program (× t_block: the chain)."""
        for i, t in enumerate(timed):
            self.kernels[i] = len(t.kernels)
            for j, k in enumerate(t.kernels):
                self.memory[i, j] = k.memory_s * k.ceilings.efficiency
                self.compute[i, j] = k.compute_s
                self.chain[i, j] = k.waves * k.blocks_per_program
        self.launch = timed[0].kernels[0].ceilings.launch_s

    def seconds(self, ramp_s: float, efficiency: float, block_s: float) -> np.ndarray:
        """Each point's model time under the constants (decode_time.KernelTime.time_s)."""
        busy = np.hypot(np.maximum(self.memory / efficiency, self.compute), self.chain * block_s)
        return self.kernels * (self.launch + ramp_s) + busy.sum(axis=1)


def points(record: dict[str, Any], hw: Hardware, decode: tuple[str, ...],
           cascade: tuple[str, ...]) -> tuple[list[Timed], np.ndarray, np.ndarray,
                                              list[Timed], np.ndarray]:
    """(decode Timed, their measured seconds, their shape index; shared-prefix Timed, their
    measured seconds)."""
    tiles = record_tiles(record)
    dt: list[Timed] = []
    dm: list[float] = []
    shape: list[int] = []
    n = 0
    for section in decode:
        for d in record.get(section, []):
            if d.get("status") != "ok":
                continue
            counts = DecodeCounts(decode_workload(d), hw, tiles)
            for r in d["sweep"]:
                dt.append(counts.splitkv(r["splits"]))
                dm.append(r["time_s"])
                shape.append(n)
            n += 1
    ct: list[Timed] = []
    cm: list[float] = []
    for section in cascade:
        for c in record.get(section, []):
            if c.get("status") != "ok":
                continue
            counts = DecodeCounts(batch_workload(c), hw, tiles)
            bs, bc = c["best_splitkv"], c["best_cascade"]
            ct.append(counts.splitkv(bs["splits"]))
            cm.append(bs["time_s"])
            ct.append(counts.cascade(bc["prefix_splits"], bc["suffix_splits"]))
            cm.append(bc["time_s"])
    return dt, np.array(dm), np.array(shape), ct, np.array(cm)


def main(argv: list[str]) -> int:
    decode, cascade = DECODE, CASCADE
    args = list(argv)
    for flag in ("--decode", "--cascade"):
        if flag in args:
            at = args.index(flag)
            value = tuple(s for s in args[at + 1].split(",") if s)
            decode, cascade = (value, cascade) if flag == "--decode" else (decode, value)
            del args[at:at + 2]
    record = json.loads(Path(args[0] if args else RECORD).read_text())
    hw = unfitted_h200()
    dt, dm, shape, ct, cm = points(record, hw, decode, cascade)
    d_terms, c_terms = Terms(dt), Terms(ct) if ct else None
    shapes = int(shape.max()) + 1 if len(shape) else 0
    best = (np.inf, 0.0, 0.0, 0.0)
    for ramp in np.arange(0, 8.01, 0.25):
        for eff in np.arange(0.90, 1.121, 0.02):
            for block in np.arange(0.6, 2.001, 0.05):
                args3 = (ramp * 1e-6, eff, block * 1e-6)
                err = 0.0
                if shapes:
                    sq = np.log(d_terms.seconds(*args3) / dm) ** 2
                    err += float(np.mean(np.bincount(shape, sq) / np.bincount(shape)))
                if c_terms is not None:
                    err += float(np.mean(np.log(c_terms.seconds(*args3) / cm) ** 2))
                if err < best[0]:
                    best = (err, ramp, eff, block)
    err, ramp, eff, block = best
    base = ceilings(hw)
    print(f"decode_fit on decode {'+'.join(decode)} ({len(dt)} times, {shapes} shapes) and "
          f"shared prefix {'+'.join(cascade)} ({len(ct)} times): ramp_us {ramp:.2f}, "
          f"efficiency {eff:.2f}, block_us {block:.2f}; objective {err:.4f} "
          f"(launch {base.launch_s * 1e6:.2f} µs, L2 {base.l2_bytes_per_s or 0:.3g} B/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
