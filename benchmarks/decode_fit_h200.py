"""Fit the decoding time model's four constants (analysis/decode_time.py: the ramp t_ramp, the
memory efficiency η, a program's latency per key block t_block and its matmul rate r_mma) on
seen sets of the H200 record.

    python benchmarks/decode_fit_h200.py [RECORD] [--decode SECTIONS] [--cascade SECTIONS]
        [--mla SECTIONS]

RECORD defaults to tests/data/h200-variants.json. Points: every timed split count of the decode
shapes of the --decode sections (default decode,decode_judge,decode_fresh) and both methods of
the shared-prefix batches of the --cascade sections (default cascade,cascade_judge,
cascade_fresh,cascade_fresh2) at their measured fastest split counts, and every timed split
count of the MLA shapes of the --mla sections (default mla; its kernel's 32 × 32 tiles, 2
programs per SM). The objective weighs the three kinds alike: the mean over decode (MLA) shapes
of each shape's mean squared log error, plus the mean squared log error of the shared-prefix
times. A grid over ramp 0..8 µs by 0.25, η
0.90..1.12 by 0.02 (1.12: the spec sheet's 4.8 TB/s over the measured copy rate), t_block
0.3..2.0 µs by 0.05 and r_mma 0.2..3 TFLOP/s by 0.1; the counts are made once (compare at each
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
from iosim.analysis.decode_kernel_time import ceilings
from iosim.analysis.decode_time import MEASURED_TILES, DecodeCounts, Tiles, Timed
from iosim.inputs.gpus import resolve_hardware
from iosim.inputs.hardware import Hardware
from iosim.record import replace

RECORD = Path(__file__).resolve().parents[1] / "tests" / "data" / "h200-variants.json"
DECODE = ("decode", "decode_judge", "decode_fresh")
MLA = ("mla",)
MLA_TILES = Tiles(32, 32, 32)
"""kernels_mla_fp8.MlaConfig: 32 query rows × 32 latent rows; 2 programs per SM (255 registers
× 128 threads; the tiling's figure from its 74 KiB of shared memory is 2 too)."""
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


def mla_workload(p: dict[str, Any]) -> Workload:
    """An MLA decode shape of the record (the latent cache: V inside K)."""
    return Workload(1, n_kv=p["n_kv"], d=p["d"], d_v=p["d_v"], heads=p["heads"], kv_heads=1,
                    batch=p["batch"], latent_kv=True, dtype=p["dtype"],
                    page_size=p.get("page_size"))


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
        """waves × blocks per program (× the block's time: the chain)."""
        self.flops = np.zeros(shape)
        """FLOPs of one block's dots."""
        for i, t in enumerate(timed):
            self.kernels[i] = len(t.kernels)
            for j, k in enumerate(t.kernels):
                self.memory[i, j] = k.memory_s * k.ceilings.efficiency
                self.compute[i, j] = k.compute_s
                self.chain[i, j] = k.waves * k.blocks_per_program
                self.flops[i, j] = k.block_flops
        self.launch = timed[0].kernels[0].ceilings.launch_s

    def seconds(self, ramp_s: float, efficiency: float, block_s: float, rate: float
                ) -> np.ndarray:
        """Each point's model time under the constants (decode_time.KernelTime.time_s)."""
        chain = self.chain * (block_s + self.flops / rate)
        busy = np.hypot(np.maximum(self.memory / efficiency, self.compute), chain)
        return self.kernels * (self.launch + ramp_s) + busy.sum(axis=1)


def points(record: dict[str, Any], hw: Hardware, decode: tuple[str, ...],
           cascade: tuple[str, ...], mla: tuple[str, ...] = ()
           ) -> tuple[list[Timed], np.ndarray, np.ndarray, list[Timed], np.ndarray]:
    """(decode and MLA Timed, their measured seconds, their shape index; shared-prefix Timed,
    their measured seconds)."""
    tiles = record_tiles(record)
    dt: list[Timed] = []
    dm: list[float] = []
    shape: list[int] = []
    shapes = [(d, decode_workload(d), tiles) for section in decode
              for d in record.get(section, []) if d.get("status") == "ok"]
    shapes += [(p, mla_workload(p), MLA_TILES) for section in mla
               for p in record.get(section, []) if p.get("status") == "ok"]
    for n, (d, workload, shape_tiles) in enumerate(shapes):
        counts = DecodeCounts(workload, hw, shape_tiles)
        for r in d["sweep"]:
            dt.append(counts.splitkv(r["splits"]))
            dm.append(r["time_s"])
            shape.append(n)
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
    sets = {"--decode": DECODE, "--cascade": CASCADE, "--mla": MLA}
    args = list(argv)
    for flag in sets:
        if flag in args:
            at = args.index(flag)
            sets[flag] = tuple(s for s in args[at + 1].split(",") if s)
            del args[at:at + 2]
    decode, cascade, mla = sets["--decode"], sets["--cascade"], sets["--mla"]
    record = json.loads(Path(args[0] if args else RECORD).read_text())
    hw = unfitted_h200()
    dt, dm, shape, ct, cm = points(record, hw, decode, cascade, mla)
    d_terms, c_terms = Terms(dt), Terms(ct) if ct else None
    shapes = int(shape.max()) + 1 if len(shape) else 0
    best = (np.inf, 0.0, 0.0, 0.0, 0.0)
    for ramp in np.arange(0, 8.01, 0.25):
        for eff in np.arange(0.90, 1.121, 0.02):
            for block in np.arange(0.3, 2.001, 0.05):
                for tflops in np.arange(0.2, 3.01, 0.1):
                    args4 = (ramp * 1e-6, eff, block * 1e-6, tflops * 1e12)
                    err = 0.0
                    if shapes:
                        sq = np.log(d_terms.seconds(*args4) / dm) ** 2
                        err += float(np.mean(np.bincount(shape, sq) / np.bincount(shape)))
                    if c_terms is not None:
                        err += float(np.mean(np.log(c_terms.seconds(*args4) / cm) ** 2))
                    if err < best[0]:
                        best = (err, ramp, eff, block, tflops)
    err, ramp, eff, block, tflops = best
    base = ceilings(hw)
    print(f"decode_fit on decode {'+'.join(decode)}, MLA {'+'.join(mla)} ({len(dt)} times, "
          f"{shapes} shapes) and shared prefix {'+'.join(cascade)} ({len(ct)} times): ramp_us "
          f"{ramp:.2f}, efficiency {eff:.2f}, block_us {block:.2f}, program_tflops "
          f"{tflops:.1f}; objective {err:.4f} "
          f"(launch {base.launch_s * 1e6:.2f} µs, L2 {base.l2_bytes_per_s or 0:.3g} B/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
