"""The backward on the H200 in one run (issue 10): check, tune, time, count.

    python3 benchmarks/backward_h200.py OUTDIR [--quick] [--tune]
    python3 benchmarks/backward_h200.py OUTDIR --torch-only     # SDPA's and eager's kernels
    python3 benchmarks/backward_h200.py OUTDIR --fresh          # issue 10's gaps, fresh points
    python3 benchmarks/backward_h200.py OUTDIR --fresh2         # (a), (c) again: a second set
    python3 benchmarks/backward_h200.py OUTDIR --fresh3         # bwd4's rules, a third set
    python3 benchmarks/backward_h200.py OUTDIR --fresh4         # the Triton backward, small N
    python3 benchmarks/backward_h200.py OUTDIR --fresh5         # bwd5's soft L2 cutoff, a fifth set
    python3 benchmarks/backward_h200.py OUTDIR --fresh6         # bwd5's rules frozen, a sixth set
    python3 benchmarks/backward_h200.py OUTDIR --fresh7         # bwd7's rules frozen, a seventh set
    python3 benchmarks/backward_h200.py OUTDIR --fresh8         # bwd8's out-of-place rule: eager, SDPA
    python3 benchmarks/backward_h200.py OUTDIR --fresh9 --no-ncu  # bwd9: eager host floor, time only
    python3 benchmarks/backward_h200.py OUTDIR --fresh10        # bwd11: eager's GEMM handovers
    python3 benchmarks/backward_h200.py OUTDIR --fresh11 --no-ncu  # bwd12: SDPA host floor, time only
    python3 benchmarks/backward_h200.py OUTDIR --fresh12        # bwd13: the backward's DRAM rules
    python3 benchmarks/backward_h200.py OUTDIR --fresh14        # bwd14: split-K partials at one head
    python3 benchmarks/backward_h200.py OUTDIR --fresh15        # bwd15: the session's host speed

1. Every point's Triton backward is checked against torch autograd in fp32 (bench_bwd.py)
   before anything is timed; a failed check or an unsupported shape: one line, exit 2.
2. --tune: candidate tiles per head dim timed at N = 8,192 (causal and not); the fastest in
   total is used for the grid (and recorded: copy it into algorithms/triton_bwd.py).
3. Each point timed: the Triton backward, SDPA's flash backward, and eager PyTorch's backward
   (the standard path) where its N×N matrices fit.
4. ncu: DRAM and L2 bytes (and time) of every backward kernel (ncu_bwd.py), in launch order;
   the Triton backward also with an evict between its kernels on a subset (isolate).
Writes OUTDIR/backward-h200.json (the record), progress to stdout.

--fresh (issue 10's open gaps, judged on shapes no model was chosen on; `fresh_grid`): SDPA's
flash backward causal at N ≥ 32,768, eager's causal mask pass, eager at N not a multiple of 8
(each SDPA and eager point timed and counted as --torch-only does), and Algorithm 4 in Triton
(kernels_fa1_bwd.py: checked against fp32 autograd at every point first, then timed and
counted). Writes OUTDIR/backward-h200-fresh.json. --fresh2: gaps (a) and (c) as shipped after
that set was seen, on a second set (`fresh2_grid`), OUTDIR/backward-h200-fresh2.json.
--fresh3: the rules bwd4 shipped after both were seen (the dirty-line ledger, Algorithm 4's
time, the Triton backward's small-N time) on a third set (`fresh3_grid`): SDPA and eager,
Algorithm 4, and the Triton backward (checked, timed beside SDPA, counted), written down before
the run; OUTDIR/backward-h200-fresh3.json. --fresh4: the Triton backward alone at more small-N
points of 0.2-0.5 ms below one wave (`fresh4_grid`: fresh3 had two above the launch bound),
OUTDIR/backward-h200-fresh4.json. --fresh5: bwd5's rules (the soft L2 cutoff of
estimates/l2_cutoff.py, frozen at the tag `bwd5-frozen`) on a fifth set (`fresh5_grid`) that
varies every axis: SDPA and eager, Algorithm 4 near and beyond the L2, the Triton backward;
OUTDIR/backward-h200-fresh5.json.

--torch-only (the standard path's and FA2's CUDA backward, issue 10 item 3): no Triton kernel;
the points of `torch_grid`, each labelled fit or judge, timed (SDPA's flash backward, and eager
PyTorch's where it is listed, its gradients compared with SDPA's first) and counted under ncu per
kernel. Writes OUTDIR/backward-h200-torch.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any


def grid(quick: bool) -> tuple[list[Any], list[Any]]:
    """(points, eager points)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    if quick:
        pts = [Pt(4096, 128, 2, 16, 16, False), Pt(3000, 128, 2, 16, 16, True),
               Pt(8192, 64, 1, 8, 2, True), Pt(4096, 128, 1, 8, 8, False, "bf16")]
        return pts, [Pt(2048, 128, 1, 16, 16, False), Pt(2048, 64, 1, 8, 2, True)]
    pts = []
    for causal in (False, True):
        for n in (1024, 2048, 3000, 4096, 8192, 12345, 16384, 32768):
            pts.append(Pt(n, 128, 2, 16, 16, causal))
        pts.append(Pt(65536, 128, 1, 4, 4, causal))
        for n in (2048, 5000, 8192, 16384):
            pts.append(Pt(n, 64, 2, 16, 16, causal))
        for batch, heads in ((1, 4), (1, 16), (4, 16), (8, 16)):
            pts.append(Pt(8192, 128, batch, heads, heads, causal))
        for n in (4096, 16384):
            pts.append(Pt(n, 128, 1, 32, 8, causal))  # GQA g = 4
        pts.append(Pt(4096, 128, 2, 16, 16, causal, "bf16"))
        pts.append(Pt(16384, 128, 2, 16, 16, causal, "bf16"))
        pts.append(Pt(8192, 64, 2, 16, 16, causal, "bf16"))
    pts.append(Pt(65536, 128, 1, 16, 16, False))  # a head's K/V (2 × 16 MiB) beyond half the L2
    pts.append(Pt(65536, 64, 1, 16, 16, True))
    pts.append(Pt(2048, 128, 1, 4, 4, False))  # fewer programs than SMs
    pts.append(Pt(2048, 128, 1, 4, 4, True))
    pts.append(Pt(1024, 64, 1, 8, 8, False))
    pts.append(Pt(8192, 128, 1, 16, 1, False))  # MQA g = 16
    pts.append(Pt(8192, 64, 2, 16, 2, True))  # GQA g = 8, d = 64
    eager = [Pt(n, 128, 1, 16, 16, False) for n in (1024, 2048, 4096, 8192)]
    eager += [Pt(2048, 128, 1, 16, 16, True), Pt(8192, 128, 1, 8, 8, True),
              Pt(4096, 64, 1, 16, 16, False), Pt(4096, 128, 1, 16, 4, False),
              Pt(3000, 128, 1, 16, 16, True)]
    return pts, eager


def torch_grid() -> list[tuple[Any, bool, str]]:
    """(point, with eager, split) for --torch-only. The fit set: few heads, N a power of two or
    near one, both dtypes, causal and not, one GQA point. The judge set varies every axis away
    from it: batch·heads below one wave and far above it, N not a power of two, N_kv ≠ N, MQA
    and GQA, d = 64 and 128, fp16 and bf16, causal, and the standard path's N×N matrices in L2
    (P of 4-36 MiB) and far beyond it, FA2's Q/dO/dQaccum of a head beyond the L2."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    fit = [  # eager and SDPA
        (Pt(1024, 128, 1, 16, 16, False), True), (Pt(2048, 128, 1, 16, 16, False), True),
        (Pt(4096, 128, 1, 16, 16, False), True), (Pt(2048, 64, 1, 8, 8, True), True),
        (Pt(4096, 128, 1, 16, 4, False), True), (Pt(3072, 128, 1, 8, 8, True, "bf16"), True),
        (Pt(1024, 64, 2, 4, 4, False), True),
        (Pt(8192, 128, 2, 16, 16, False), False), (Pt(16384, 64, 1, 16, 16, True), False),
        (Pt(4096, 64, 2, 16, 16, True, "bf16"), False), (Pt(32768, 128, 1, 4, 4, False), False),
    ]
    judge = [
        (Pt(1536, 128, 1, 8, 8, False), True), (Pt(1024, 128, 1, 2, 2, True, "bf16"), True),
        (Pt(5000, 64, 1, 4, 1, False), True), (Pt(2048, 128, 2, 8, 8, False, n_kv=4096), True),
        (Pt(6000, 128, 1, 8, 2, True, "bf16"), True), (Pt(1024, 128, 4, 16, 16, False), True),
        (Pt(12345, 64, 1, 2, 2, False), True), (Pt(8192, 128, 1, 16, 16, True), True),
        (Pt(2500, 64, 1, 16, 16, False), True),
        (Pt(2048, 128, 2, 16, 16, False, n_kv=8192), False),
        (Pt(4096, 64, 1, 8, 8, False, "bf16", n_kv=1024), False),
        (Pt(777, 128, 1, 4, 4, False), False), (Pt(10000, 64, 1, 32, 4, True, "bf16"), False),
        (Pt(6000, 128, 3, 8, 8, True), False), (Pt(24000, 128, 1, 8, 2, False), False),
        (Pt(1024, 128, 1, 16, 16, False, "bf16", n_kv=16384), False),
        (Pt(50000, 64, 1, 4, 4, True), False), (Pt(8192, 64, 4, 16, 16, False), False),
    ]
    return [(p, e, "fit") for p, e in fit] + [(p, e, "judge") for p, e in judge]


FA1_TILES = {64: (64, 64, 4, 1), 128: (64, 64, 8, 1)}
"""Algorithm 4's B_r, B_c, warps, stages per head dim (kernels_fa1_bwd.Fa1Tiles)."""


def fresh_grid() -> tuple[list[tuple[Any, bool, str]], list[Any]]:
    """((point, with eager, gap) for SDPA and eager, Algorithm 4's points), written before any
    of them was measured: none equals a point of the earlier records."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [  # (a) FA2's causal backward at N >= 32768
        (Pt(40000, 128, 1, 4, 4, True), False, "a"), (Pt(32768, 64, 1, 8, 8, True), False, "a"),
        (Pt(49152, 128, 1, 2, 2, True, "bf16"), False, "a"),
        (Pt(36000, 128, 1, 6, 2, True), False, "a"), (Pt(65536, 64, 1, 4, 4, True), False, "a"),
        # (b) eager's causal mask pass, the per-head stream below and above the L2
        (Pt(5000, 128, 1, 4, 4, True), True, "b"), (Pt(4096, 64, 2, 4, 4, True), True, "b"),
        (Pt(7000, 64, 1, 4, 4, True, "bf16"), True, "b"), (Pt(3504, 128, 1, 8, 8, True), True, "b"),
        (Pt(10240, 128, 1, 2, 2, True), True, "b"),
        # (c) N not a multiple of 8: odd, 2 and 4 mod 8
        (Pt(3001, 128, 1, 8, 8, False), True, "c"), (Pt(4098, 64, 1, 8, 8, False), True, "c"),
        (Pt(6004, 128, 1, 4, 4, True), True, "c"), (Pt(9999, 64, 1, 2, 2, False, "bf16"), True, "c"),
        (Pt(2002, 128, 2, 8, 8, False), True, "c"), (Pt(7777, 128, 1, 4, 1, False), True, "c"),
    ]
    flash1 = [  # (d) Algorithm 4: below one wave, per-head sweeps inside and beyond the L2
        Pt(2048, 64, 1, 8, 8, False), Pt(4096, 128, 1, 16, 16, False),
        Pt(8192, 64, 2, 16, 16, False), Pt(8192, 128, 1, 32, 32, True),
        Pt(3000, 128, 1, 12, 12, True, "bf16"), Pt(4096, 64, 4, 64, 64, True),
        Pt(1000, 128, 1, 4, 4, False), Pt(4096, 128, 1, 16, 4, False),
        Pt(16384, 64, 1, 8, 8, False),
    ]
    return torch_points, flash1


def fresh2_grid() -> tuple[list[tuple[Any, bool, str]], list[Any]]:
    """The second fresh set (the lead's call after the session's merges, 2026-12-01): the
    current forms of gap (a)'s restart rule and gap (c)'s unaligned-kernel rule were shipped
    after the first fresh set was seen, so they are judged here on shapes written down before
    this run, none equal to a point of any earlier record."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [  # (a) FA2's causal backward at N >= 32768, d 128 and 64, GQA and not
        (Pt(45056, 128, 1, 3, 3, True), False, "a"), (Pt(33000, 64, 1, 6, 6, True), False, "a"),
        (Pt(57344, 64, 1, 2, 2, True, "bf16"), False, "a"),
        (Pt(40960, 128, 1, 8, 2, True), False, "a"), (Pt(34816, 64, 2, 4, 4, True), False, "a"),
        (Pt(53248, 128, 1, 2, 1, True), False, "a"),
        # (c) eager at N % 8 != 0, d 64 and 128: odd, 2, 4 and 6 mod 8
        (Pt(5003, 64, 1, 4, 4, False), True, "c"), (Pt(3333, 128, 1, 8, 8, False, "bf16"), True, "c"),
        (Pt(6146, 64, 1, 4, 4, True), True, "c"), (Pt(2501, 128, 2, 4, 4, False), True, "c"),
        (Pt(8190, 128, 1, 2, 2, False), True, "c"), (Pt(4604, 64, 1, 8, 2, False), True, "c"),
    ]
    return torch_points, []


def fresh3_grid() -> tuple[list[tuple[Any, bool, str]], list[Any], list[Any]]:
    """The third fresh set (bwd4, 2026-12-01), written before the run, none equal to a point
    of any earlier record: ((point, with eager, gap) for SDPA and eager, Algorithm 4's points,
    the Triton backward's points). Gaps: s = small kernels (N % 8 != 0 among them), a = FA2's
    causal backward at d = 64, N >= 50,000, d = Algorithm 4, t = the Triton backward at small
    N and batch·heads below one wave."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [
        # (s) small backwards, N % 8 != 0 (odd, 2, 4, 6 mod 8) and aligned, GQA, bf16, causal
        (Pt(3005, 64, 1, 4, 4, False), True, "s"), (Pt(4099, 128, 1, 2, 2, False, "bf16"), True, "s"),
        (Pt(2046, 64, 2, 4, 4, True), True, "s"), (Pt(6001, 128, 1, 4, 2, False), True, "s"),
        (Pt(1540, 128, 1, 8, 8, False), True, "s"), (Pt(2560, 64, 1, 6, 6, True, "bf16"), True, "s"),
        (Pt(3584, 128, 1, 3, 3, False), True, "s"),
        # (a) FA2's causal backward at d = 64, N >= 50,000
        (Pt(51200, 64, 1, 4, 4, True), False, "a"),
        (Pt(61440, 64, 1, 2, 2, True, "bf16"), False, "a"),
        (Pt(50000, 64, 1, 8, 2, True), False, "a"),
    ]
    flash1 = [  # (d) Algorithm 4: one wave and more, per-head sweeps inside and beyond the L2
        Pt(2500, 64, 1, 6, 6, False), Pt(6144, 128, 1, 8, 8, False),
        Pt(3072, 64, 2, 96, 96, True), Pt(12288, 64, 1, 4, 4, True),
        Pt(4096, 128, 1, 24, 6, True, "bf16"), Pt(1536, 128, 2, 80, 80, False),
        Pt(5120, 64, 1, 200, 200, False),
    ]
    triton = [  # (t) the Triton backward at small N, batch·heads below one wave
        Pt(1664, 128, 1, 8, 8, False), Pt(2560, 64, 1, 12, 12, True),
        Pt(1280, 128, 2, 8, 8, True, "bf16"), Pt(3584, 64, 1, 4, 4, False),
        Pt(2048, 128, 1, 6, 2, False), Pt(1792, 64, 3, 8, 8, False),
        Pt(6144, 128, 1, 2, 2, True), Pt(2304, 128, 1, 16, 16, False),
    ]
    return torch_points, flash1, triton


def fresh4_grid() -> list[Any]:
    """The Triton backward at small N, batch·heads below one wave, 0.2-0.5 ms (bwd4, written
    before the run, after fresh3 was seen; the rules are those frozen at `bwd4-frozen`)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [Pt(3072, 128, 1, 8, 8, False), Pt(4096, 64, 1, 8, 8, True),
            Pt(2816, 128, 2, 4, 4, False), Pt(5120, 64, 1, 6, 6, False),
            Pt(3584, 128, 1, 10, 10, True, "bf16"), Pt(5632, 128, 1, 4, 2, False),
            Pt(7168, 64, 1, 4, 4, True), Pt(3328, 128, 3, 4, 4, True)]


def fresh5_grid() -> tuple[list[tuple[Any, bool, str]], list[Any], list[Any]]:
    """The fifth fresh set (bwd5, 2026-12-01), committed before the run with the rules frozen at
    `bwd5-frozen`, none equal to a point of any earlier record; (SDPA and eager points, Algorithm
    4's, the Triton backward's) as fresh3_grid. It varies batch·heads (2 to 150, below one wave
    and beyond), N (none a power of two but one, up to 65,536), d 64/128, causal and not,
    fp16/bf16, GQA, and where K/V, a head's sweeps and the N×N matrices stand against the 60 MiB
    L2: Algorithm 4's per-head sweeps at 0.66-0.89 of it (the cutoff's transition) and beyond.
    Two Triton points of N 136 and 200 measure the launcher floor (host time per backward)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [
        # (s) SDPA and eager: the N×N matrices in L2 (52 MB at N 1800, 8 heads) and far beyond
        (Pt(1800, 128, 2, 4, 2, False, "bf16"), True, "s"), (Pt(2900, 64, 1, 6, 6, False), True, "s"),
        (Pt(6500, 64, 1, 16, 16, True), True, "s"), (Pt(1100, 128, 8, 8, 8, False), True, "s"),
        # (a) FA2's causal backward at d = 64, N >= 50,000 (GQA among them), and N = 65,536 full
        (Pt(54000, 64, 1, 4, 4, True), False, "a"), (Pt(58000, 64, 1, 2, 1, True, "bf16"), False, "a"),
        (Pt(65536, 128, 1, 2, 2, False), False, "a"), (Pt(12000, 128, 4, 16, 16, True), False, "a"),
    ]
    flash1 = [  # (d) Algorithm 4: a head's sweeps × heads at 0.66-0.89 of the L2, and beyond
        Pt(5000, 128, 1, 10, 10, False), Pt(3500, 128, 1, 12, 12, False),
        Pt(9000, 64, 2, 6, 6, False), Pt(6200, 128, 1, 8, 2, True, "bf16"),
        Pt(14000, 64, 1, 6, 6, True), Pt(2600, 128, 1, 150, 150, False),
        Pt(7000, 64, 1, 14, 14, False, "bf16"),
    ]
    triton = [  # (t) the Triton backward: below one wave and beyond, GQA, N up to 20,480
        Pt(4608, 128, 2, 8, 8, False), Pt(10000, 128, 1, 8, 8, True, "bf16"),
        Pt(6000, 64, 4, 16, 4, False), Pt(20480, 128, 1, 4, 4, True),
        Pt(1900, 64, 1, 4, 4, False, "bf16"),
        # the launcher floor measured directly: kernels of a few µs, the time is the host's
        # (three launches; four with GQA's group sum)
        Pt(136, 64, 1, 1, 1, False), Pt(200, 128, 1, 2, 1, False, "bf16"),
    ]
    return torch_points, flash1, triton


def fresh6_grid() -> tuple[list[tuple[Any, bool, str]], list[Any], list[Any]]:
    """The sixth fresh set (bwd6, 2026-12-01), committed before the run with the rules frozen at
    `bwd6-frozen` (bwd5's rules unchanged), none equal to a point of any earlier record; (SDPA
    and eager points, Algorithm 4's, the Triton backward's) as fresh3_grid. It varies
    batch·heads (2 to 64, below one wave and beyond), N (none a power of two, up to 62,000),
    d 64/128, causal and not, fp16/bf16, GQA, and the N×N matrices (eager) and a head's K/V
    and sweeps (Algorithm 4, FA2) inside the 60 MiB L2 and beyond it."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [
        # (s) SDPA and eager: the N×N matrices about the L2 (54 MB at N 1500, 12 heads) and far beyond
        (Pt(2200, 64, 1, 8, 4, False, "bf16"), True, "s"), (Pt(1500, 128, 2, 6, 6, True), True, "s"),
        (Pt(3300, 128, 1, 4, 4, False), True, "s"), (Pt(5200, 64, 4, 16, 8, True, "bf16"), True, "s"),
        # (a) FA2's backward at N up to 62,000 (causal, GQA among them) and 64 heads
        (Pt(62000, 64, 1, 3, 3, True), False, "a"), (Pt(40000, 128, 1, 4, 2, True, "bf16"), False, "a"),
        (Pt(16000, 64, 8, 8, 8, False), False, "a"),
    ]
    flash1 = [  # (d) Algorithm 4: causal (the named miss) and not, GQA, beyond one wave
        Pt(4500, 128, 1, 8, 8, True), Pt(8000, 64, 1, 6, 3, True, "bf16"),
        Pt(4000, 128, 1, 16, 16, False), Pt(11000, 64, 1, 4, 4, True),
        Pt(3000, 64, 3, 20, 20, False),
    ]
    triton = [  # (t) the Triton backward: below one wave and beyond, GQA, N up to 33,000
        Pt(3000, 128, 1, 6, 6, True), Pt(12500, 64, 1, 8, 2, True, "bf16"),
        Pt(7500, 128, 2, 16, 16, False), Pt(2700, 64, 2, 4, 4, False),
        Pt(33000, 128, 1, 2, 2, True), Pt(900, 128, 1, 3, 3, False, "bf16"),
        Pt(160, 64, 1, 2, 2, False),  # launcher-bound: kernels of a few µs
    ]
    return torch_points, flash1, triton


def fresh7_grid() -> tuple[list[tuple[Any, bool, str]], list[Any], list[Any]]:
    """The seventh fresh set (bwd7, 2026-12-02), committed before the run with the rules frozen
    at `bwd7-frozen` (bwd6's and the ncu protocol's residue, the launcher floor), none equal to
    a point of any earlier record (tests/test_fresh7_backward.py); (SDPA and eager points,
    Algorithm 4's, the Triton backward's) as fresh3_grid. It varies batch·heads (1 to 128,
    below one wave and beyond), N (none a power of two but one, up to 65,536), d 64/128,
    causal and not, fp16/bf16, GQA, and the N×N matrices (eager: 0.5-0.9 of the L2 and far
    beyond), a head's K/V and Algorithm 4's sweeps (0.36-1.5 of it) inside and beyond the
    60 MiB L2. Three Triton points are launcher-bound (kernels of a few µs)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    torch_points = [
        # (s) SDPA and eager: the N×N matrices at 0.53-0.92 of the L2 and far beyond it
        (Pt(1700, 128, 1, 10, 10, False), True, "s"),
        (Pt(1250, 64, 2, 8, 4, True, "bf16"), True, "s"),
        (Pt(2900, 128, 1, 2, 2, False), True, "s"), (Pt(4100, 64, 3, 8, 8, True), True, "s"),
        (Pt(700, 128, 1, 40, 40, False, "bf16"), True, "s"),
        # (a) FA2's backward at N up to 65,536 (causal, GQA among them) and 128 heads
        (Pt(65536, 128, 1, 3, 3, True, "bf16"), False, "a"),
        (Pt(44000, 64, 1, 6, 2, True, "bf16"), False, "a"),
        (Pt(21000, 128, 2, 8, 8, False), False, "a"), (Pt(9000, 64, 8, 16, 16, True), False, "a"),
    ]
    flash1 = [  # (d) Algorithm 4: causal and not, GQA, sweeps at 0.36-1.5 of the L2
        Pt(5500, 64, 1, 8, 8, True), Pt(3800, 128, 1, 12, 4, False, "bf16"),
        Pt(2300, 64, 2, 40, 40, True), Pt(9500, 128, 1, 3, 3, True),
    ]
    triton = [  # (t) the Triton backward: below one wave and beyond, GQA, N up to 48,000
        Pt(5800, 128, 1, 4, 4, False), Pt(15000, 64, 2, 16, 4, True, "bf16"),
        Pt(2200, 128, 4, 16, 16, True), Pt(26000, 64, 1, 3, 3, False),
        Pt(48000, 128, 1, 2, 1, True, "bf16"),
        # launcher-bound: kernels of a few µs (three launches; four with GQA's group sum)
        Pt(300, 64, 1, 3, 3, False), Pt(520, 128, 2, 2, 2, True, "bf16"),
        Pt(1100, 64, 1, 4, 2, False),
    ]
    return torch_points, flash1, triton


def fresh8_grid() -> list[tuple[Any, bool, str]]:
    """The eighth fresh set (bwd8, 2026-12-02): SDPA's and eager's backward only, committed
    before the run with the rules frozen at `bwd8-frozen` (eager's mask and scale backward out
    of place: configs/impls/torch-naive.yaml `out_of_place`), none equal to a point of any
    earlier record or grid (tests/test_fresh8_backward.py). It varies N (none a power of two;
    seven of 14 at 1,500-2,000, where bwd7's eager misses sat), batch·heads (2 to 64), d 64/128,
    causal and not, fp16/bf16, GQA, and the N×N matrices (all heads: 0.10-0.92 of the 60 MiB
    L2, and 3-10 times beyond it). Every point runs both."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        # the N x N matrices at 0.52-0.92 of the L2 (two of them stream through each pass)
        Pt(1900, 128, 1, 8, 8, True), Pt(1550, 64, 1, 12, 12, False, "bf16"),
        Pt(1800, 128, 2, 4, 2, True, "bf16"), Pt(2000, 64, 1, 5, 5, False),
        Pt(1650, 128, 1, 6, 3, False), Pt(1520, 64, 3, 4, 4, True),
        Pt(1100, 128, 1, 24, 24, True, "bf16"), Pt(600, 64, 4, 16, 16, False, "bf16"),
        # well inside the L2 (0.10-0.29 of it)
        Pt(900, 64, 1, 4, 4, False), Pt(1300, 128, 1, 2, 1, True, "bf16"),
        Pt(1750, 64, 1, 3, 3, False, "bf16"),
        # far beyond it (3-10 times)
        Pt(3300, 128, 2, 8, 8, False, "bf16"), Pt(5200, 64, 1, 12, 4, True),
        Pt(2500, 128, 1, 16, 16, True),
    )]


def fresh9_grid() -> list[tuple[Any, bool, str]]:
    """The ninth fresh set (bwd9, 2026-12-02): eager's (and SDPA's) backward, timed only (no
    ncu: `--no-ncu`), committed before the run with eager's host floor frozen at `bwd9-frozen`
    (iosim/calibrate/eager_host_floor.py), none equal to a point of any earlier record or grid
    (tests/test_fresh9_backward.py). Nine points whose kernels take 0.15-0.46 ms by the frozen
    model (under the floor's 0.40-0.57 ms: the floor decides them) and four of 1.1-2.8 ms
    (where it must not); N none a power of two (800-4,500), batch·heads 1 to 24, d 64/128,
    causal and not, fp16/bf16, GQA (groups of 2)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        # kernels of 0.15-0.46 ms: host-bound if the floor is right
        Pt(1400, 64, 1, 6, 6, False), Pt(1150, 128, 2, 4, 4, True, "bf16"),
        Pt(2100, 64, 1, 4, 2, False, "bf16"), Pt(800, 128, 3, 8, 8, False),
        Pt(1700, 64, 1, 8, 4, True), Pt(2400, 128, 1, 3, 3, True),
        Pt(1350, 128, 1, 12, 6, False, "bf16"), Pt(2700, 64, 1, 2, 2, False),
        Pt(1250, 128, 1, 1, 1, True),
        # kernels of 1.1-2.8 ms: GPU-bound, the floor must not touch them
        Pt(3600, 128, 1, 8, 8, True, "bf16"), Pt(4500, 64, 2, 6, 3, False),
        Pt(2900, 128, 2, 12, 12, True), Pt(3900, 64, 1, 10, 10, False, "bf16"),
    )]


def fresh10_grid() -> list[tuple[Any, bool, str]]:
    """The tenth fresh set (bwd11, 2026-12-02): eager's (and SDPA's) backward, counted by ncu
    per kernel, committed before the run with bwd11's GEMM-handover rule frozen at
    `bwd11-frozen` (iosim/estimates/l2_handover.py: what a cuBLAS GEMM finds in L2 of the N×N
    operand the kernel before it streamed), none equal to a point of any earlier record or grid
    (tests/test_fresh10_backward.py). The N×N matrices (all heads) run from 0.3 to 3 times the
    60 MiB L2, 13 of 16 between 0.5 and 1.6 (where eager's dK, dQ and dP GEMMs missed); N
    2,050-6,800, none a power of two; batch·heads 1 to 16; d 64/128; causal and not;
    fp16/bf16; GQA (groups of 2 and 3)."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        # N x N at 0.3-0.65 of the L2
        Pt(3150, 128, 1, 1, 1, False, "bf16"), Pt(2300, 128, 1, 3, 3, True, "bf16"),
        Pt(2100, 64, 1, 4, 4, False), Pt(3100, 128, 1, 2, 2, True),
        # 0.75-1.2: the band of the GEMMs' misses
        Pt(2200, 128, 1, 5, 5, False), Pt(5300, 64, 1, 1, 1, True),
        Pt(2700, 64, 1, 4, 2, False), Pt(2350, 64, 2, 3, 3, False, "bf16"),
        Pt(4200, 64, 1, 2, 2, False, "bf16"), Pt(3500, 128, 1, 3, 1, False, "bf16"),
        Pt(6100, 128, 1, 1, 1, False, "bf16"),
        # 1.4-3 times the L2
        Pt(4800, 128, 1, 2, 1, True, "bf16"), Pt(2450, 64, 2, 4, 4, True, "bf16"),
        Pt(2900, 128, 1, 6, 3, True), Pt(2050, 128, 4, 4, 4, False),
        Pt(6800, 64, 1, 2, 1, True),
    )]


def fresh11_grid() -> list[tuple[Any, bool, str]]:
    """The eleventh fresh set (bwd12, 2026-12-02): SDPA's flash backward timed (eager's beside it,
    as fresh8 and fresh9 ran them; no ncu: `--no-ncu`), committed before the run with SDPA's
    host floor frozen at `bwd12-frozen` (iosim/calibrate/eager_host_floor.py FLOORS["sdpa"]),
    none equal to a point of any earlier record or grid (tests/test_fresh11_backward.py). Eight
    points whose kernels take 0.05-0.15 ms by the frozen model (under the floor's 0.15 ms, 0.20
    ms with GQA: the floor decides them), two of 0.16-0.30 ms (just above it: it must not
    touch them) and three of 0.95-1.4 ms (GPU-bound); N none a power of two (500-6,300),
    batch·heads 1 to 32, d 64/128, causal and not, fp16/bf16, GQA and MQA. A GPU-bound point
    runs first (fresh9's first calls ran fast). Measured under the name fresh10 (`--fresh10`)
    at bwd12-frozen; renamed fresh11 on merge, bwd11's set having that name."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        Pt(4700, 128, 1, 8, 8, False, "bf16"),
        # kernels of 0.05-0.15 ms: host-bound if the floor is right (GQA's three: 7 launches)
        Pt(1450, 64, 1, 5, 5, False), Pt(950, 128, 2, 6, 6, True, "bf16"),
        Pt(1850, 64, 1, 6, 3, False), Pt(700, 128, 1, 16, 4, False),
        Pt(1600, 128, 1, 4, 1, True, "bf16"), Pt(2600, 64, 2, 2, 2, False),
        Pt(500, 64, 1, 2, 2, True), Pt(1100, 64, 1, 1, 1, False, "bf16"),
        # kernels of 0.16-0.30 ms, above the floor
        Pt(1200, 64, 4, 8, 8, True), Pt(3400, 128, 1, 6, 2, True),
        # kernels of 0.95-1.4 ms: GPU-bound
        Pt(6300, 64, 2, 8, 4, True), Pt(3800, 128, 2, 10, 10, False),
    )]


def fresh12_grid() -> list[tuple[Any, bool, str]]:
    """The twelfth fresh set (bwd13, 2026-12-02): eager's and SDPA's backward, counted by ncu per
    kernel, committed before the run with bwd13's rules frozen at `bwd13-frozen` (eager's dK
    GEMM before its dQ GEMM, the GEMMs' last wave of writes, the backward GEMMs reading the GQA
    copies, SDPA's layout copies only with more than one head: calibrate/fresh12_bwd.py), none
    equal to a point of any earlier record or grid (tests/test_fresh12_backward.py). GQA ratios
    2, 3, 4, 6 and 8 (MQA among them) for eager's group sum; one head at batch 1, 2 and 3 (SDPA
    launches no layout copy at one head whatever the batch, by the rule); N % 8 != 0 at 12 of
    16; the N×N matrices (all heads) from 0.5 to 4.5 times the 60 MiB L2; d 64/128; causal and
    not; fp16/bf16."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        # GQA: groups of 2, 3, 4, 6, 8
        Pt(2750, 128, 1, 4, 2, False), Pt(3300, 64, 1, 6, 2, True, "bf16"),
        Pt(1900, 128, 1, 8, 2, False, "bf16"), Pt(2500, 64, 1, 12, 2, True),
        Pt(1400, 128, 1, 16, 2, False), Pt(4100, 128, 1, 8, 1, False, "bf16"),
        Pt(2030, 64, 1, 10, 5, True, "bf16"), Pt(1150, 128, 4, 8, 2, False),
        Pt(6200, 128, 1, 2, 1, True), Pt(3250, 64, 1, 4, 1, False, "bf16"),
        # one head: batch 1, 3, 2
        Pt(3999, 64, 1, 1, 1, False), Pt(2600, 128, 3, 1, 1, True, "bf16"),
        Pt(5500, 64, 2, 1, 1, False),
        # multi-head attention
        Pt(2150, 64, 2, 6, 6, False, "bf16"), Pt(3700, 128, 1, 3, 3, True),
        Pt(1600, 128, 1, 6, 6, True),
    )]


def fresh14_grid() -> list[tuple[Any, bool, str]]:
    """The fourteenth fresh set (bwd14, 2026-12-02): eager's and SDPA's backward, counted by ncu
    per kernel and timed, committed before the run with bwd14's rule frozen at `bwd14-frozen`
    (cuBLAS's split-K partial sums of eager's dV, dK, dQ GEMMs at batch·heads 1:
    calibrate/split_k.py), none equal to a point of any earlier record or grid
    (tests/test_fresh14_backward.py). One head at batch 1 at six N (1,300-12,500: the rule's
    S = 23,000 / N from 17.7 down to 1.8, under 2 at the last: no split assumed), one at batch 2
    (batch·heads 2: no split); GQA groups 3, 4, 6 (2 and 3 KV heads); batch·heads 1 to 144
    (below and above the 132 SMs); N none a power of two, N % 8 != 0 at most; d 64/128; causal
    and not; fp16/bf16."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "s") for p in (
        # one head, batch 1: split-K by the rule (S = 23,000 / N ≥ 2) ...
        Pt(2900, 128, 1, 1, 1, True), Pt(4500, 64, 1, 1, 1, False, "bf16"),
        Pt(7300, 128, 1, 1, 1, False), Pt(3333, 64, 1, 1, 1, True, "bf16"),
        Pt(9100, 64, 1, 1, 1, True), Pt(1300, 64, 1, 1, 1, False, "bf16"),
        # ... and where S would fall under 2 (no split assumed)
        Pt(12500, 128, 1, 1, 1, False, "bf16"),
        # one head at batch 2: batched GEMMs, no split
        Pt(4300, 128, 2, 1, 1, False),
        # GQA
        Pt(2200, 128, 1, 8, 2, True, "bf16"), Pt(3900, 64, 2, 6, 2, False),
        Pt(2800, 64, 1, 12, 2, True, "bf16"),
        # multi-head attention, batch·heads 2 to 144
        Pt(5100, 128, 1, 4, 4, True), Pt(1850, 64, 8, 18, 18, False, "bf16"),
        Pt(6600, 64, 1, 2, 2, False), Pt(2450, 128, 2, 3, 3, True, "bf16"),
        Pt(3600, 128, 1, 16, 16, False),
    )]


def fresh15_grid() -> list[tuple[Any, bool, str]]:
    """The fifteenth fresh set (bwd15, 2026-12-02): eager's and SDPA's backward timed (and
    counted by ncu), committed before the run with bwd15's session host speed frozen at
    `bwd15-frozen` (calibrate/host_session.py: the floor × the session's speed read off the
    host probe, HOST_PROBE, timed before and after the grid; eager's mask pass vectorised at one
    head), none equal to a point of any earlier record or grid
    (tests/test_fresh15_backward.py). Seven one-head points at batch 1 (host-bound at small N,
    device-bound at large; three causal for the mask), five more below one wave and host-bound
    in a slow session (batch·heads 3-8, GQA among them), three above (batch·heads 12-160);
    N none a power of two; d 64/128; causal and not; fp16/bf16."""
    from iosim.calibrate.bench_bwd import BwdPoint as Pt

    return [(p, True, "h") for p in (
        # one head, batch 1
        Pt(1700, 64, 1, 1, 1, False), Pt(2350, 128, 1, 1, 1, True, "bf16"),
        Pt(3750, 64, 1, 1, 1, True), Pt(5600, 128, 1, 1, 1, False, "bf16"),
        Pt(2050, 128, 1, 1, 1, False), Pt(8300, 64, 1, 1, 1, False, "bf16"),
        Pt(4440, 128, 1, 1, 1, True, "bf16"),
        # below one wave, small N: host-bound where the host is slow
        Pt(1450, 128, 1, 3, 3, False, "bf16"), Pt(1150, 64, 2, 4, 4, True),
        Pt(900, 128, 1, 8, 2, False), Pt(2650, 64, 1, 6, 2, True, "bf16"),
        Pt(1950, 64, 3, 2, 2, False, "bf16"),
        # device-bound
        Pt(3300, 64, 2, 9, 9, True), Pt(2700, 128, 4, 40, 40, False, "bf16"),
        Pt(4700, 128, 1, 12, 12, False),
    )]


HOST_PROBE = (256, 64, 1, 2, 2, False)
"""The host probe (calibrate/host_session.py PROBE): eager's and SDPA's backward there take
the host's time (kernels of a few µs), timed before and after a --fresh15 grid."""


def host_probe() -> dict[str, Any]:
    """One timing of the host probe (eager's and SDPA's backward), as time_torch records it."""
    from iosim.calibrate import bench_bwd as BB

    r = BB.time_torch(BB.BwdPoint(*HOST_PROBE), eager=True)
    log(f"host probe: sdpa {r['sdpa_s'] * 1e3:.3f} ms, eager {r['eager_s'] * 1e3:.3f} ms")
    return r


def record_header(what: str, argv: list[str]) -> dict[str, Any]:
    """What a record says of itself: what it measures, the command, the device and versions."""
    import torch
    import triton

    properties = torch.cuda.get_device_properties(0)
    return {
        "what": what,
        "command": "python3 benchmarks/backward_h200.py " + " ".join(argv),
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "triton": triton.__version__, "python": platform.python_version(),
        "sm_count": properties.multi_processor_count,
        "l2_bytes": int(getattr(properties, "L2_cache_size", 0)),
    }


def torch_spec(points: list[tuple[Any, bool, str]]) -> list[dict[str, Any]]:
    """What ncu profiles of (point, with eager, label) points: SDPA's backward at each, eager's
    too where asked."""
    spec = []
    for p, eager, _ in points:
        spec.append({"id": p.id, "what": "sdpa", "point": p.fields()})
        if eager:
            spec.append({"id": p.id, "what": "eager", "point": p.fields()})
    return spec


def torch_only(args: argparse.Namespace, argv: list[str], out: Path) -> int:
    import torch

    from iosim.calibrate import bench_bwd as BB
    from iosim.calibrate.ncu_bwd import collect

    started = time.time()
    record = record_header(
        "SDPA flash backward and eager PyTorch backward, per kernel (issue 10 item 3)", argv)
    torch.manual_seed(0)
    grid_points = torch_grid()
    timed = []
    for p, eager, split in grid_points:
        r = BB.time_torch(p, eager=eager)
        r["split"] = split
        timed.append(r)
        log(f"{p.id} [{split}]: sdpa {r['sdpa_s'] * 1e3:.3f} ms" + (
            f", eager {r['eager_s'] * 1e3:.3f} ms, agree {max(r['agree_eager'].values()):.1e}"
            if eager else ""))
        torch.cuda.empty_cache()
    record["points"] = timed
    (out / "backward-h200-torch.json").write_text(json.dumps(record, indent=1))
    log(f"timed in {time.time() - started:.0f} s")
    if not args.no_ncu:
        spec = torch_spec(grid_points)
        budget = args.deadline_s - (time.time() - started)
        record["counters"] = collect(spec, log=out / "ncu.log", timeout_s=max(10.0, budget))
        log(f"ncu: {record['counters']['status']} ({time.time() - started:.0f} s)")
    record["wall_s"] = time.time() - started
    (out / "backward-h200-torch.json").write_text(json.dumps(record, indent=1))
    return 0


def fresh(args: argparse.Namespace, argv: list[str], out: Path) -> int:
    import torch

    from iosim.calibrate import CalibrationError
    from iosim.calibrate import bench_bwd as BB
    from iosim.calibrate import bench_fa1_bwd as BF
    from iosim.calibrate.kernels_fa1_bwd import Fa1Tiles
    from iosim.calibrate.ncu_bwd import collect
    from iosim.record import asdict

    started = time.time()
    failed: list[str] = []
    second, third, fourth, fifth = args.fresh2, args.fresh3, args.fresh4, args.fresh5
    sixth, seventh, eighth, ninth = args.fresh6, args.fresh7, args.fresh8, args.fresh9
    tenth, eleventh, twelfth = args.fresh10, args.fresh11, args.fresh12
    fourteenth, fifteenth = args.fresh14, args.fresh15
    name = ("backward-h200-fresh15.json" if fifteenth else
            "backward-h200-fresh14.json" if fourteenth else
            "backward-h200-fresh12.json" if twelfth else
            "backward-h200-fresh11.json" if eleventh else
            "backward-h200-fresh10.json" if tenth else "backward-h200-fresh9.json" if ninth
            else "backward-h200-fresh8.json" if eighth else "backward-h200-fresh7.json" if seventh
            else "backward-h200-fresh6.json" if sixth
            else "backward-h200-fresh5.json" if fifth else "backward-h200-fresh4.json" if fourth
            else "backward-h200-fresh3.json" if third
            else "backward-h200-fresh2.json" if second else "backward-h200-fresh.json")
    record = record_header(
        "bwd15's session host speed frozen at bwd15-frozen: eager's and SDPA's backward timed "
        "(and counted) on a fifteenth fresh set, the host probe before and after" if fifteenth
        else "bwd14's split-K rule frozen at bwd14-frozen: eager's and SDPA's backward kernels on "
        "a fourteenth fresh set" if fourteenth else
        "bwd13's backward rules frozen at bwd13-frozen: eager's and SDPA's backward kernels on "
        "a twelfth fresh set" if twelfth else
        "bwd11's GEMM-handover rule frozen at bwd11-frozen: eager's and SDPA's backward kernels "
        "on a tenth fresh set" if tenth else
        "bwd12's SDPA host floor frozen at bwd12-frozen: SDPA's (and eager's) backward timed on "
        "an eleventh fresh set (run as fresh10)" if eleventh else
        "bwd9's eager host floor frozen at bwd9-frozen: eager's and SDPA's backward timed on a "
        "ninth fresh set" if ninth else
        "bwd8's rules frozen at bwd8-frozen (eager's mask and scale backward out of place), "
        "SDPA's and eager's backward kernels on an eighth fresh set" if eighth else
        "bwd7's rules frozen at bwd7-frozen, every backward kernel on a seventh fresh set"
        if seventh else
        "bwd5's rules frozen at bwd6-frozen, every backward kernel on a sixth fresh set" if sixth
        else "bwd5's soft L2 cutoff and every backward kernel on a fifth fresh set" if fifth else
        "the Triton backward at small N below one wave, bwd4's frozen schedule" if fourth else
        "issue 10's rules as shipped by bwd4 (dirty-line ledger, Algorithm 4's time, the Triton "
        "backward at small N) on a third fresh set" if third else
        "issue 10's gaps (a) and (c) on a second fresh set: the rules as shipped after the first"
        if second else "issue 10's open gaps on fresh points: SDPA causal N >= 32768, eager "
        "causal and N % 8 != 0, Algorithm 4 in Triton", argv)
    # fresh11 was measured as --fresh10 (seed 10) before its rename: the same seed
    torch.manual_seed(15 if fifteenth else 14 if fourteenth else 12 if twelfth
                      else 10 if tenth or eleventh else 9 if ninth
                      else 8 if eighth else 7 if seventh else 6 if sixth else 5 if fifth
                      else 4 if fourth else 3 if third
                      else 2 if second else 1)
    triton_points: list[Any] = []
    if fifteenth:
        torch_points, flash1 = fresh15_grid(), []
    elif fourteenth:
        torch_points, flash1 = fresh14_grid(), []
    elif twelfth:
        torch_points, flash1 = fresh12_grid(), []
    elif eleventh:
        torch_points, flash1 = fresh11_grid(), []
    elif tenth:
        torch_points, flash1 = fresh10_grid(), []
    elif ninth:
        torch_points, flash1 = fresh9_grid(), []
    elif eighth:
        torch_points, flash1 = fresh8_grid(), []
    elif seventh:
        torch_points, flash1, triton_points = fresh7_grid()
    elif sixth:
        torch_points, flash1, triton_points = fresh6_grid()
    elif fifth:
        torch_points, flash1, triton_points = fresh5_grid()
    elif fourth:
        torch_points, flash1, triton_points = [], [], fresh4_grid()
    elif third:
        torch_points, flash1, triton_points = fresh3_grid()
    else:
        torch_points, flash1 = fresh2_grid() if second else fresh_grid()
    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES
    from iosim.calibrate.kernels import KernelInputError
    tri_checked = {}
    for p in triton_points:  # the Triton backward: checked against fp32 autograd first
        try:
            tri_checked[p.id] = BB.check_triton(p, TRITON_BWD_TILES[p.d])
        except (CalibrationError, KernelInputError) as exc:
            failed.append(f"backward_h200: {exc}")
    triton_points = [p for p in triton_points if p.id in tri_checked]
    tiles = {d: Fa1Tiles(*t) for d, t in FA1_TILES.items()}
    checked = {}
    for p in flash1:  # a point whose Algorithm 4 fails its check is never timed or counted
        try:
            checked[p.id] = BF.check_flash1(p, tiles[p.d])
        except CalibrationError as exc:
            failed.append(f"backward_h200: {exc}")
    record["flash1_check_failed"] = failed
    flash1 = [p for p in flash1 if p.id in checked]
    log(f"flash1: {len(checked)} points checked, {len(failed)} failed")
    probes = [host_probe()] if fifteenth else []
    timed = []
    for p, eager, gap in torch_points:
        r = BB.time_torch(p, eager=eager)
        r["split"], r["gap"] = "fresh", gap
        timed.append(r)
        log(f"{p.id} [{gap}]: sdpa {r['sdpa_s'] * 1e3:.3f} ms"
            + (f", eager {r['eager_s'] * 1e3:.3f} ms" if eager else ""))
        torch.cuda.empty_cache()
    for p in flash1:
        r = BF.time_flash1(p, tiles[p.d])
        r["split"], r["gap"], r["check_rel_error"] = "fresh", "d", checked[p.id]
        timed.append(r)
        log(f"{p.id} [d]: flash1 {r['flash1_s'] * 1e3:.3f} ms")
        torch.cuda.empty_cache()
    for p in triton_points:
        r = BB.time_point(p, TRITON_BWD_TILES[p.d], eager=False)
        r["split"], r["gap"], r["check_rel_error"] = "fresh", "t", tri_checked[p.id]
        timed.append(r)
        log(f"{p.id} [t]: triton {r['triton_s'] * 1e3:.3f} ms, sdpa {r['sdpa_s'] * 1e3:.3f} ms")
        torch.cuda.empty_cache()
    if fifteenth:
        record["host_probe"] = [*probes, host_probe()]
    record["points"] = timed
    (out / name).write_text(json.dumps(record, indent=1))
    log(f"timed in {time.time() - started:.0f} s")
    if not args.no_ncu:
        spec = torch_spec(torch_points)
        # the protocol alone (evict, evict), twice: its residue
        if seventh or eighth or ninth or tenth or eleventh or twelfth or fourteenth or fifteenth:
            spec = [{"id": "null", "what": "null"}, *spec, {"id": "null2", "what": "null"}]
        for p in flash1:
            spec.append({"id": p.id, "what": "flash1", "point": p.fields(),
                         "tiles": asdict(tiles[p.d])})
        for p in triton_points:
            spec.append({"id": p.id, "what": "triton", "point": p.fields(),
                         "tiles": asdict(TRITON_BWD_TILES[p.d])})
        budget = args.deadline_s - (time.time() - started)
        record["counters"] = collect(spec, log=out / "ncu.log", timeout_s=max(10.0, budget))
        log(f"ncu: {record['counters']['status']} ({time.time() - started:.0f} s)")
    record["wall_s"] = time.time() - started
    (out / name).write_text(json.dumps(record, indent=1))
    if failed:
        print(failed[0] + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""),
              file=sys.stderr)
        return 2
    return 0


def candidates() -> list[Any]:
    from iosim.algorithms.triton_bwd import BackwardTiles as T

    return [T(32, 128, 128, 32, 4, 3), T(32, 128, 128, 32, 4, 5), T(32, 128, 128, 32, 8, 3),
            T(64, 128, 128, 64, 8, 3), T(64, 64, 64, 64, 4, 3)]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--skip-timing", action="store_true", help="checks, then ncu only")
    ap.add_argument("--torch-only", action="store_true",
                    help="SDPA's and eager's backward kernels on torch_grid (no Triton kernel)")
    ap.add_argument("--fresh", action="store_true",
                    help="issue 10's open gaps on fresh points (fresh_grid)")
    ap.add_argument("--fresh2", action="store_true",
                    help="gaps (a) and (c) on the second fresh set (fresh2_grid)")
    ap.add_argument("--fresh3", action="store_true",
                    help="bwd4's rules on the third fresh set (fresh3_grid)")
    ap.add_argument("--fresh4", action="store_true",
                    help="the Triton backward at small N (fresh4_grid)")
    ap.add_argument("--fresh5", action="store_true",
                    help="bwd5's soft L2 cutoff on a fifth fresh set (fresh5_grid)")
    ap.add_argument("--fresh6", action="store_true",
                    help="bwd5's rules, frozen, on a sixth fresh set (fresh6_grid)")
    ap.add_argument("--fresh7", action="store_true",
                    help="bwd7's rules, frozen, on a seventh fresh set (fresh7_grid)")
    ap.add_argument("--fresh8", action="store_true",
                    help="bwd8's out-of-place rule, frozen: SDPA and eager on fresh8_grid")
    ap.add_argument("--fresh9", action="store_true",
                    help="bwd9's eager host floor, frozen: eager and SDPA timed on fresh9_grid "
                         "(with --no-ncu)")
    ap.add_argument("--fresh10", action="store_true",
                    help="bwd11's GEMM-handover rule, frozen: eager and SDPA on fresh10_grid")
    ap.add_argument("--fresh11", action="store_true",
                    help="bwd12's SDPA host floor, frozen: SDPA and eager timed on fresh11_grid "
                         "(with --no-ncu)")
    ap.add_argument("--fresh12", action="store_true",
                    help="bwd13's backward rules, frozen: eager and SDPA on fresh12_grid")
    ap.add_argument("--fresh14", action="store_true",
                    help="bwd14's split-K rule, frozen: eager and SDPA on fresh14_grid")
    ap.add_argument("--fresh15", action="store_true",
                    help="bwd15's session host speed, frozen: eager and SDPA on fresh15_grid, "
                         "the host probe before and after")
    ap.add_argument("--deadline-s", type=float, default=570.0,
                    help="ncu is stopped this many seconds after the start")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import torch
        import triton  # noqa: F401  (a missing triton is said here, before any work)
    except ImportError as exc:
        print(f"backward_h200: {exc.name} is not installed; run on the GPU machine", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("backward_h200: no CUDA GPU (torch.cuda.is_available() is False); run it on the "
              "GPU to be measured", file=sys.stderr)
        return 2
    if args.torch_only:
        return torch_only(args, argv, out)
    if args.fresh or args.fresh2 or args.fresh3 or args.fresh4 or args.fresh5 \
            or args.fresh6 or args.fresh7 or args.fresh8 or args.fresh9 or args.fresh10 \
            or args.fresh11 or args.fresh12 or args.fresh14 or args.fresh15:
        return fresh(args, argv, out)
    from iosim.algorithms.triton_bwd import TRITON_BWD_TILES
    from iosim.calibrate import CalibrationError
    from iosim.calibrate import bench_bwd as BB
    from iosim.calibrate.kernels import KernelInputError
    from iosim.calibrate.ncu_bwd import collect
    from iosim.record import asdict  # the tiles are Records (iosim.record), not dataclasses

    started = time.time()
    points, eager_points = grid(args.quick)
    tiles = dict(TRITON_BWD_TILES)
    record = record_header(
        "iosim Triton backward vs SDPA flash backward vs eager backward (issue 10)", argv)
    torch.manual_seed(0)
    try:
        # 1. correctness first, at every point, with the shipped tiles (and every candidate)
        checked = {}
        for p in points + eager_points:
            checked[p.id] = BB.check_triton(p, tiles.get(p.d, tiles[64]))
        log(f"checked {len(checked)} points")
        # 2. tiles
        if args.tune:
            tuning = []
            for d in (64, 128):
                best = None
                for cand in candidates():
                    total = 0.0
                    row: dict[str, Any] = {"d": d, "tiles": asdict(cand)}
                    for causal in (False, True):
                        try:  # checked before it is timed, at the timed variant (N % 128 = 0)
                            BB.check_triton(BB.BwdPoint(1024, d, 1, 1, 1, causal), cand)
                        except CalibrationError:
                            raise
                        except Exception as exc:  # a candidate that does not compile
                            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                            total = float("inf")
                            break
                        p = BB.BwdPoint(8192, d, 2, 16, 16, causal)
                        t = BB.time_point(p, cand, eager=False)
                        row["causal" if causal else "full"] = t
                        total += t["triton_s"]
                    row["total_s"] = total
                    tuning.append(row)
                    log(f"tune d={d} {cand}: {total * 1e3:.2f} ms")
                    if best is None or total < best[0]:
                        best = (total, cand)
                assert best is not None
                tiles[d] = best[1]
            record["tuning"] = tuning
            record["chosen_tiles"] = {str(d): asdict(t) for d, t in tiles.items()}
            for p in points + eager_points:  # the chosen tiles, checked at every point first
                checked[p.id] = BB.check_triton(p, tiles.get(p.d, tiles[64]))
        record["tiles"] = {str(d): asdict(t) for d, t in tiles.items()}
        # 3. times
        eager_ids = {p.id for p in eager_points}
        timed = []
        to_time = points + [e for e in eager_points if e.id not in {q.id for q in points}]
        for p in [] if args.skip_timing else to_time:
            r = BB.time_point(p, tiles.get(p.d, tiles[64]), eager=p.id in eager_ids)
            r["check_rel_error"] = checked[p.id]
            timed.append(r)
            log(f"{p.id}: triton {r['triton_s'] * 1e3:.3f} ms, sdpa {r['sdpa_s'] * 1e3:.3f} ms, "
                f"ratio {r['speed_ratio']:.2f}" + (f", eager {r['eager_s'] * 1e3:.3f} ms"
                                                   if "eager_s" in r else ""))
            torch.cuda.empty_cache()
        record["points"] = timed
    except (CalibrationError, KernelInputError) as exc:
        print(f"backward_h200: {exc}", file=sys.stderr)
        return 2
    (out / "backward-h200.json").write_text(json.dumps(record, indent=1))
    log(f"timed in {time.time() - started:.0f} s")
    # 4. counters
    if not args.no_ncu:
        spec = []
        for p in points:
            t = asdict(tiles.get(p.d, tiles[64]))
            spec.append({"id": p.id, "what": "triton", "point": p.fields(), "tiles": t})
            spec.append({"id": p.id, "what": "sdpa", "point": p.fields()})
        isolate = points[:: max(1, len(points) // 12)]
        for p in isolate:
            spec.append({"id": p.id, "what": "triton", "point": p.fields(), "isolate": True,
                         "tiles": asdict(tiles.get(p.d, tiles[64]))})
        for p in eager_points:
            spec.append({"id": p.id, "what": "eager", "point": p.fields()})
        budget = args.deadline_s - (time.time() - started)
        record["counters"] = collect(spec, log=out / "ncu.log", timeout_s=max(10.0, budget))
        log(f"ncu: {record['counters']['status']} ({time.time() - started:.0f} s)")
    record["wall_s"] = time.time() - started
    (out / "backward-h200.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1:]))
