"""Rendered tables, compared as exact strings on a fixed-width console (rich's own test style)."""

from __future__ import annotations

import pytest

import iosim
from iosim.output import render, render_tables
from tests.conftest import SEED_ACCELERATOR, render_plain

# Seed 000's workload (N = 4,096, d = 64, fp16, one head) on its illustrative accelerator: the
# standard rows add up to the article's 136.3 MB and 68.2 µs; the numbers are the closed forms'.
KERNELS = """\
Kernels (HBM bytes, executed FLOPs, roofline time)

 algorithm kernel             read    write      HBM      FLOPs FLOP/B bound      time
 ─────────────────────────────────────────────────────────────────────────────────────
 standard  S = QKᵀ          1.0 MB  33.6 MB  34.6 MB 2.15 GFLOP   62.1 memory  17.3 µs
           P = softmax(S)  33.6 MB  33.6 MB  67.1 MB 83.9 MFLOP    1.2 memory  33.6 µs
           O = PV          34.1 MB 524.3 kB  34.6 MB 2.15 GFLOP   62.1 memory  17.3 µs

 flash1    init O, l, m        0 B 557.1 kB 557.1 kB     0 FLOP      0 memory   279 ns
           fused attention 18.4 MB   8.9 MB  27.3 MB 4.38 GFLOP  160.6 compute 14.3 µs

 flash2    fused attention 17.3 MB 540.7 kB  17.8 MB 4.38 GFLOP  245.4 compute 14.3 µs

"""

SUMMARY = """\
Per algorithm

 algorithm blocks      HBM ÷ std      FLOPs    time speed-up bound   extra HBM fits HBM
 ──────────────────────────────────────────────────────────────────────────────────────
 standard       — 136.3 MB 1.00× 4.38 GFLOP 68.2 µs    1.00× memory    67.1 MB yes
 flash1    64×256  27.8 MB 4.90× 4.38 GFLOP 14.6 µs    4.67× compute   32.8 kB yes
 flash2    256×64  17.8 MB 7.64× 4.38 GFLOP 14.3 µs    4.76× compute   16.4 kB yes

"""


@pytest.fixture(scope="module")
def seed000() -> iosim.Comparison:
    hw = iosim.load_hardware(SEED_ACCELERATOR)
    # the seed's blocks are Alg. 1 line 1's (seeds/000), so flash2 keeps that rule here
    return iosim.compare(iosim.Workload(4096, d=64), hw, sram_elements=65_536, tiles="alg1")


def _plain(renderable: object) -> str:
    return "\n".join(line.rstrip() for line in render_plain(renderable, width=100).splitlines()) + "\n"


def test_kernel_table(seed000):
    assert _plain(render_tables.kernel_table(seed000, wide=True)) == KERNELS


def test_summary_table(seed000):
    assert _plain(render_tables.summary_table(seed000, wide=True)) == SUMMARY


@pytest.mark.parametrize(("value", "text"), [
    (136_314_880, "136.3 MB"), (541_065_216, "541.1 MB"), (512, "512 B"), (16_384, "16.4 kB"),
])
def test_fmt_bytes(value, text):
    assert render.fmt_bytes(value) == text


@pytest.mark.parametrize(("seconds", "text"), [(68.2e-6, "68.2 µs"), (0.0417, "41.7 ms"), (2.5e-7, "250 ns")])
def test_fmt_time(seconds, text):
    assert render.fmt_time(seconds) == text


def test_fmt_binary_bytes():
    # seed 003: one head's fp16 score matrix at N = 8,192 is 128 MiB, 32 GiB at N = 131,072
    assert render.fmt_binary_bytes(8192 * 8192 * 2) == "128 MiB"
    assert render.fmt_binary_bytes(131072 * 131072 * 2) == "32 GiB"
