"""The wave model (estimates/occupancy.py) against the exact list schedule of the programs."""

from __future__ import annotations

import math

import pytest

from iosim.analysis.compare import compare
from iosim.estimates.occupancy import causal_utilisation, makespan, utilisation
from iosim.inputs.workload import Workload

SMS = 132  # the H200's


@pytest.mark.parametrize(("n", "block_q", "block_kv", "heads"), [
    (8192, 128, 64, 16), (4096, 128, 64, 16), (5000, 128, 64, 8), (2048, 128, 64, 128),
    (16384, 128, 64, 4), (1024, 128, 128, 132), (65536, 128, 64, 2), (2048, 128, 128, 16),
    (4096, 128, 128, 4)])
def test_causal_tail_is_the_launch_order_schedule(n: int, block_q: int, block_kv: int,
                                                  heads: int) -> None:
    """Query block i of a causal head visits ⌈min(n, (i+1)·B_r)/B_c⌉ key blocks; the grid
    launches them shortest first, head after head, each to the first free SM. The closed form's
    utilisation is within 3 % of that schedule's."""
    blocks = math.ceil(n / block_q)
    lengths = [math.ceil(min(n, (i + 1) * block_q) / block_kv) for i in range(blocks)] * heads
    exact = sum(lengths) / (SMS * makespan(lengths, SMS))
    closed = causal_utilisation(len(lengths), sum(lengths), max(lengths), SMS)
    assert closed == pytest.approx(exact, rel=0.03)


def test_equal_programs_fill_whole_waves() -> None:
    for programs in (1, 131, 132, 133, 264, 1000):
        exact = programs / (SMS * makespan([1.0] * programs, SMS))
        assert utilisation(programs, SMS) == pytest.approx(exact)


def test_compare_uses_the_causal_tail() -> None:
    """A causal FlashAttention-2 forward's time is its roofline time over the causal u."""
    c = compare(Workload(8192, d=64, heads=16, causal=True), "h200", algorithms=["flash2"])
    (k,) = c.algorithm("flash2").kernels
    lengths = [i + 1 for i in range(8192 // 128)] * 16  # 128 × 128 tiles: i + 1 blocks
    assert k.utilisation == pytest.approx(sum(lengths) / (SMS * makespan(lengths, SMS)),
                                          rel=0.02)
    assert k.time_s == pytest.approx(max(k.memory_time_s, k.compute_time_s) / k.utilisation)


@pytest.mark.parametrize(("n", "heads", "batch"), [(1024, 1, 1), (2048, 8, 2), (4096, 33, 1),
                                                   (3072, 4, 3)])
def test_the_backward_schedule_with_one_program_per_sm_is_the_wave_rule(n: int, heads: int,
                                                                        batch: int) -> None:
    """One schedule: with one program per SM, no overhead and efficiency 1, the Triton
    backward's list schedule (schedule.py) of a non-causal kernel is its closed-form compute
    time (loopnest.kernel_flops at the roofs) over the wave rule's u = P / (S·⌈P/S⌉)."""
    from iosim.algorithms import get_algorithm
    from iosim.algorithms.loopnest import Dims, kernel_flops, kernel_programs, kernel_sums
    from iosim.estimates.schedule import scheduled_compute_s
    from iosim.inputs.hardware import BackwardSchedule

    w = Workload(n, d=64, heads=heads, batch=batch, pass_="bwd")
    schedule = BackwardSchedule(1.0, 0.0, {64: 1})
    matmul_peak, vector_peak = 600e12, 50e12
    for kernel in get_algorithm("triton").kernels(w):
        if kernel.kind != "fused" or not kernel.name.startswith("bwd_"):
            continue
        dims = Dims.of(w, None)
        matmul, elementwise = kernel_flops(kernel, dims, kernel_sums(kernel, dims))
        roof = matmul / matmul_peak + elementwise / vector_peak
        u = utilisation(kernel_programs(kernel, dims), SMS)
        scheduled = scheduled_compute_s(kernel, w, None, schedule, sm_count=SMS,
                                        matmul_peak=matmul_peak, vector_peak=vector_peak)
        assert scheduled == pytest.approx(roof / u, rel=1e-9), kernel.name
