"""Issue 14 item 4: V's head dim d_v apart from the Q·K head dim d, and MLA's latent cache.

Every count is checked against the NumPy executor and the tile walk (closed form = walk =
executor, term by term) and every output against the float64 formula; the block rule against
the paper's with d_v = d, and against the property that defines it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iosim import Workload
from iosim.algorithms import ALGORITHMS
from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.analysis.verify import verify
from iosim.cli import cli
from iosim.inputs.tiling import paper_blocks, working_set_bytes

SHAPES = [
    dict(n=96, d=48, d_v=32),                                  # d > d_v (MLA prefill's 192/128)
    dict(n=80, n_kv=112, d=24, d_v=40, causal=True),           # d < d_v, bottom-right causal
    dict(n=64, d=40, d_v=24, heads=4, kv_heads=2),             # GQA
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("pass_", ["fwd", "fwdbwd"])
def test_closed_form_walk_and_executor_agree_when_d_v_differs(shape, pass_) -> None:
    sizes = dict(shape)
    w = Workload(sizes.pop("n"), pass_=pass_, **sizes)
    result = verify(w, block_q=32, block_kv=32)
    assert {a.name for a in result.algorithms} >= {"standard", "flash1", "flash2"}
    for a in result.algorithms:
        assert a.counts_agree, (a.name, [t for t in a.terms if not t.agree], a.stream_difference)
        assert a.output_agrees and a.max_abs_err_vs_float64 < 1e-12, a.name
        assert a.gradients_agree, a.name
    # V, O and dO are d_v wide: the executor's tensors have that many columns (executor counts)
    flash2 = {(t.kernel, t.tensor, t.op): t.executor for t in result.algorithms[2].terms}
    rows_o = w.batch * w.heads * w.n
    assert flash2[("attn", "O", "write")] == rows_o * w.d_v


def test_splitkv_decoding_with_d_v_agrees_three_ways() -> None:
    w = Workload(1, n_kv=300, d=40, d_v=24, heads=8, kv_heads=2)
    result = verify(w, block_q=16, block_kv=32, algorithms=["standard", "splitkv"], splits=3)
    assert result.ok, [(a.name, a.stream_difference) for a in result.algorithms]


def test_matmul_flops_are_2_n_nkv_d_for_qk_and_2_n_nkv_d_v_for_pv() -> None:
    # a (n × d)·(d × n_kv) product is 2·n·n_kv·d FLOPs, a (n × n_kv)·(n_kv × d_v) one 2·n·n_kv·d_v
    w = Workload(256, n_kv=192, d=192, d_v=128, heads=2, batch=3)
    kernels = {k.name: k for k in compare(w, "h100", algorithms=["standard"]).algorithms[0].kernels}
    per_head = w.batch * w.heads
    assert kernels["qk"].matmul_flops == 2 * 256 * 192 * 192 * per_head
    assert kernels["pv"].matmul_flops == 2 * 256 * 192 * 128 * per_head
    # a fused kernel computes the same two products (non-causal: every tile is visited)
    flash2 = compare(w, "h100", algorithms=["flash2"]).algorithm("flash2")
    assert flash2.matmul_flops == kernels["qk"].matmul_flops + kernels["pv"].matmul_flops


@pytest.mark.parametrize("outer", ["kv", "q"])
def test_block_rule_is_the_papers_when_d_v_equals_d(outer: str) -> None:
    for m in (1, 7, 1000, 98_304, 116_224):
        for d in (1, 16, 64, 100, 128, 256):
            assert paper_blocks(m, d, outer, d) == paper_blocks(m, d, outer)
            assert working_set_bytes(64, 32, d, 2, d_v=d) == working_set_bytes(64, 32, d, 2)


def test_block_rule_keeps_the_four_rows_within_m() -> None:
    # the defining property of B_c = ⌈M/2(d + d_v)⌉: one row of each of Q_i, K_j (d wide) and
    # V_j, O_i (d_v wide), B_c times, reaches M, and B_c − 1 times does not
    for m, d, d_v in ((116_224, 192, 128), (98_304, 576, 512), (65_536, 64, 256)):
        _, resident = paper_blocks(m, d, "kv", d_v)
        rows = 2 * (d + d_v)
        assert (resident - 1) * rows < m <= resident * rows


def test_one_point_sweeps_over_d_v_equal_compare() -> None:
    spec = SweepSpec(n=(512,), gpu=("h100",), d=(192,), d_v=(96, 128, 256), heads=(2,),
                     algorithms=("flash1", "flash2"), pass_=("fwdbwd",))
    result = sweep(spec)
    for i, d_v in enumerate(spec.d_v):
        c = compare(Workload(512, d=192, d_v=d_v, heads=2, pass_="fwdbwd"), "h100",
                    algorithms=["flash1", "flash2"])
        for grid in result.algorithms:
            a = c.algorithm(grid.name)
            assert int(grid.hbm_bytes[i]) == a.hbm_bytes
            assert int(grid.flops[i]) == a.flops


def test_latent_cache_is_read_once_as_k_and_never_as_v() -> None:
    # DeepSeek-V2/V3 absorbed decoding: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 dims per
    # token, V = the first 512 (arXiv 2405.04434 §2.1.2-2.1.3; FlashMLA README: head_dim 576,
    # head_dim_v 512)
    w = Workload(1, n_kv=4096, d=576, d_v=512, heads=16, kv_heads=1, batch=2, latent_kv=True)
    c = compare(w, "h100", algorithms=["splitkv"], block_q=64, block_kv=64, splits=4)
    split = c.algorithm("splitkv")
    tensors = {t.tensor for k in split.kernels for t in k.traffic}
    assert "V" not in tensors
    k_bytes = sum(t.bytes for k in split.kernels for t in k.traffic if t.tensor == "K")
    assert k_bytes == 2 * 4096 * 576 * 2  # the 16 heads packed into one 64-row tile: K once
    assert c.compulsory_hbm_bytes == (2 * 16 * 576 + 2 * 4096 * 576 + 2 * 16 * 512) * 2


def test_latent_decoding_agrees_three_ways_and_with_float64() -> None:
    w = Workload(1, n_kv=200, d=40, d_v=32, heads=12, kv_heads=1, latent_kv=True)
    result = verify(w, block_q=8, block_kv=32, algorithms=["standard", "flash1", "flash2",
                                                           "splitkv"], splits=3)
    assert result.ok
    for a in result.algorithms:
        assert a.max_abs_err_vs_float64 < 1e-12
        assert all(t.tensor != "V" for t in a.terms)


def test_triton_refuses_what_its_kernels_cannot_run() -> None:
    triton = ALGORITHMS["triton"]
    for w in (Workload(64, d=64, d_v=32),
              Workload(1, n_kv=64, d=72, d_v=64, kv_heads=1, latent_kv=True)):
        with pytest.raises(Exception, match="Triton kernels"):
            triton.kernels(w)


@pytest.mark.parametrize(("args", "needle"), [
    (["--d-v", "0"], "--d-v must be at least 1"),
    (["--latent-kv", "--d", "576", "--d-v", "512", "--heads", "4", "--kv-heads", "2"],
     "--latent-kv needs one latent KV head"),
    (["--latent-kv", "--d", "512", "--d-v", "512"], "--d 512 > --d-v 512"),
    (["--latent-kv", "--d", "576", "--d-v", "512", "--pass", "bwd"], "inference"),
])
def test_bad_head_dims_are_one_line_and_exit_2(args: list[str], needle: str) -> None:
    out = CliRunner().invoke(cli, ["compare", "--n", "64", "--gpu", "h100", *args])
    assert out.exit_code == 2
    assert needle in out.output and len(out.output.strip().splitlines()) == 1


def test_compare_json_carries_d_v() -> None:
    out = CliRunner().invoke(cli, ["compare", "--n", "128", "--d", "192", "--d-v", "128",
                                   "--gpu", "h100", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["workload"]["d"], data["workload"]["d_v"]) == (192, 128)


def test_latent_decoding_tiles_as_flashmla_and_a_one_point_sweep_equals_compare() -> None:
    # FlashMLA run_mha_fwd_splitkv_mla: Flash_fwd_kernel_traits_mla<576, 64, 64, 8, T, 512>
    w = Workload(1, n_kv=16384, d=576, d_v=512, heads=128, kv_heads=1, batch=4, latent_kv=True)
    c = compare(w, "h200", algorithms=["flash2", "splitkv"])
    tiling = c.algorithm("splitkv").tiling
    assert tiling is not None and (tiling.block_q, tiling.block_kv) == (64, 64)
    assert "FlashMLA" in tiling.rule
    result = sweep(SweepSpec(n=(1,), n_kv=(16384,), d=(576,), d_v=(512,), heads=(128,),
                             kv_heads=(1,), batch=(4,), gpu=("h200",), latent_kv=True,
                             algorithms=("flash2", "splitkv")))
    for grid in result.algorithms:
        a = c.algorithm(grid.name)
        assert int(grid.hbm_bytes[0]) == a.hbm_bytes and int(grid.block_q[0]) == a.tiling.block_q


def test_sweep_csv_has_a_d_v_column_only_when_d_v_is_given() -> None:
    args = ["sweep", "--gpu", "h100", "--n", "256", "--d", "64", "--algo", "flash2",
            "--format", "csv"]
    plain = CliRunner().invoke(cli, args).output.splitlines()
    given = CliRunner().invoke(cli, [*args, "--d-v", "64,32"]).output.splitlines()
    assert "d_v" not in plain[0].split(",")
    header = given[0].split(",")
    assert header[header.index("d") + 1] == "d_v"
    # d_v = d is the same workload as no d_v: the same row, with the column added
    row = dict(zip(header, given[1].split(","), strict=True))
    assert row["d_v"] == "64"
    assert [v for k, v in row.items() if k != "d_v"] == plain[1].split(",")


@pytest.mark.parametrize(("args", "needle"), [
    # FA2 and PyTorch's flash backend need one head dim for Q, K, V (sdpa-flash.yaml's source)
    (["--d", "128", "--d-v", "64", "--impl", "sdpa-flash"], "needs V's head dim equal"),
    (["--d", "576", "--d-v", "512", "--latent-kv", "--n", "1", "--impl", "flex"],
     "reads V as a tensor of its own"),
])
def test_implementations_refuse_what_they_do_not_run(args: list[str], needle: str) -> None:
    out = CliRunner().invoke(cli, ["compare", "--n", "256", "--gpu", "h100", *args])
    assert out.exit_code == 2 and needle in out.output
    assert len(out.output.strip().splitlines()) == 1
