"""Issue 14 item 5: FP8 inputs as FlashAttention-3's FP8 forward runs them (1-byte Q, K, V, a bf16
O, fp32 descale factors read from HBM). Counts are checked against the executor and the walk,
outputs against the float64 formula."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iosim import Workload
from iosim.analysis.compare import compare
from iosim.analysis.verify import verify
from iosim.cli import cli
from iosim.estimates.roofline import roofs_for
from iosim.inputs.gpus import resolve_hardware

ALGOS = ["standard", "flash1", "flash2", "splitkv"]
SHAPES = [
    dict(n=96, d=32, heads=4, kv_heads=2, causal=True),        # GQA, causal, ragged last tiles
    dict(n=1, n_kv=300, d=32, heads=8, kv_heads=2),            # decoding: heads packed
    dict(n=1, n_kv=200, d=40, d_v=32, heads=12, kv_heads=1, latent_kv=True),  # MLA, no V
]


@pytest.mark.parametrize("scales", ["tensor", "block"])
@pytest.mark.parametrize("shape", SHAPES)
def test_fp8_counts_agree_three_ways_and_the_output_is_exact(scales: str, shape: dict) -> None:
    sizes = dict(shape)
    n = sizes.pop("n")
    w = Workload(n, dtype="fp8_e4m3", fp8_scales=scales, **sizes)
    result = verify(w, block_q=16 if n == 1 else 32, block_kv=32, algorithms=ALGOS, splits=3)
    for a in result.algorithms:
        assert a.counts_agree, (a.name, [t for t in a.terms if not t.agree], a.stream_difference)
        # the inputs were divided by their factors: without the dequantisation the output
        # would be off by those factors
        assert a.max_abs_err_vs_float64 < 1e-12, a.name
        named = {t.tensor for t in a.terms}
        expected = ({"q_descale", "k_descale"} if a.name == "standard" or scales == "tensor"
                    else {"K_scale"} | ({"Q_scale"} if a.name != "standard" else set()))
        assert expected <= named, (a.name, named)
        v_scales = named & {"v_descale", "V_scale"}
        assert not v_scales if w.latent_kv else v_scales  # a latent V shares K's factor


def test_o_is_bf16_and_q_k_v_one_byte_as_fa3_writes_them() -> None:
    # FA3 hopper/flash_api.cpp: out_type = q_type == Float8_e4m3fn ? BFloat16 : q_type
    w = Workload(2048, d=128, heads=8, dtype="fp8_e4m3")
    flash2 = compare(w, "h100", algorithms=["flash2"]).algorithm("flash2")
    by_tensor = {t.tensor: t.element_bytes for k in flash2.kernels for t in k.traffic}
    assert (by_tensor["Q"], by_tensor["K"], by_tensor["V"], by_tensor["O"]) == (1, 1, 1, 2)
    assert by_tensor["q_descale"] == 4
    # the same loop nest as fp16 but half the bytes of Q, K, V, plus the fp32 factors
    fp16 = compare(w.with_(dtype="fp16", fp8_scales=None), "h100",
                   algorithms=["flash2"]).algorithm("flash2")
    halves = sum(t.bytes for k in fp16.kernels for t in k.traffic if t.tensor in "QKV") // 2
    scales = sum(t.bytes for k in flash2.kernels for t in k.traffic if "descale" in t.tensor)
    assert fp16.hbm_bytes - flash2.hbm_bytes == halves - scales


def test_fp8_peak_is_the_yamls_fp8_tensor_core_figure() -> None:
    hw = resolve_hardware("h200").hardware
    assert roofs_for(hw, "fp8_e4m3").matmul_flops_per_s == hw.peak_flops_per_s["fp8"]
    assert roofs_for(hw, "fp8_e5m2").matmul_flops_per_s == hw.peak_flops_per_s["fp8"]


@pytest.mark.parametrize(("args", "needle"), [
    (["compare", "--gpu", "a100", "--dtype", "fp8_e4m3"], "has no FP8 tensor cores"),
    (["compare", "--gpu", "h100", "--dtype", "fp8_e4m3", "--pass", "bwd"], "forward pass only"),
    (["compare", "--gpu", "h100", "--fp8-scales", "block"], "needs an FP8 dtype"),
    (["sweep", "--gpu", "h100", "--fp8-scales", "block"], "needs an FP8 dtype"),
])
def test_bad_fp8_requests_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    out = CliRunner().invoke(cli, [*args, "--n", "256"])
    assert out.exit_code == 2, out.output
    assert needle in out.output and len(out.output.strip().splitlines()) == 1


def test_compare_json_names_the_output_dtype_and_scales() -> None:
    out = CliRunner().invoke(cli, ["compare", "--n", "256", "--gpu", "h100", "--dtype",
                                   "fp8_e5m2", "--fp8-scales", "block", "--format", "json"])
    assert out.exit_code == 0, out.output
    workload = json.loads(out.output)["workload"]
    assert (workload["output_dtype"], workload["fp8_scales"]) == ("bf16", "block")
