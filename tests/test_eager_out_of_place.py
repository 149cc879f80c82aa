"""Eager PyTorch's backward mask and scale passes run out of place (configs/impls/torch-naive.yaml
`out_of_place`, analysis/impl_kernels.py): each writes a new N×N tensor that the next pass and
the dQ and dK GEMMs read. The bytes are standard's in-place passes' (checked against the NumPy
executor's count); the rule's source, autograd's formulas, is checked on torch itself."""

from __future__ import annotations

import pytest

from iosim.analysis.compare import compare
from iosim.execute import execute, precision, random_inputs
from iosim.inputs.workload import Workload

PASSES = ("bwd_mask", "bwd_scale", "bwd_dq", "bwd_dk")
NAMES = {"dS_masked": "dS", "dS_scaled": "dS", "K_rep": "K", "V_rep": "V"}
"""The out-of-place gradients, by the in-place tensor standard's loop nest names; the GQA
copies the backward GEMMs read (impl_kernels BACKWARD_READS_COPIES), by the tensor they copy."""


def _eager(w: Workload) -> dict[tuple[str, str, str], int]:
    a = compare(w, "h200", impl="torch-naive").algorithms[1]
    return {(t.kernel, t.tensor, t.op): t.bytes for t in a.traffic.terms if t.kernel in PASSES}


@pytest.mark.parametrize("causal", [True, False])
def test_out_of_place_moves_the_executors_bytes(causal: bool) -> None:
    w = Workload(96, d=16, heads=2, kv_heads=1, batch=2, causal=causal, pass_="bwd")
    unfused = ("scale", "mask") if causal else ("scale",)
    run = w.with_(unfused=unfused)
    ex = execute("standard", run, random_inputs(run, 0, precision("float64"), grad=True),
                 dtype="float16", block_q=32, block_kv=32)
    executed = {k: n * ex.itemsize[k[1]] for k, n in ex.counts.items() if k[0] in PASSES}
    eager = _eager(w)
    renamed: dict[tuple[str, str, str], int] = {}
    for (kernel, tensor, op), nbytes in eager.items():
        if tensor == "mask":  # the broadcast bool mask: torch-naive's mask_read, not standard's
            continue
        key = (kernel, NAMES.get(tensor, tensor), op)
        renamed[key] = renamed.get(key, 0) + nbytes
    assert renamed == executed


def test_each_pass_writes_a_new_tensor_the_gemms_read() -> None:
    eager = _eager(Workload(128, d=16, heads=2, causal=True, pass_="bwd"))
    writes = {k: t for (k, t, op) in eager if op == "write" and k in ("bwd_mask", "bwd_scale")}
    reads = {(k, t) for (k, t, op) in eager if op == "read"}
    assert writes == {"bwd_mask": "dS_masked", "bwd_scale": "dS_scaled"}
    assert ("bwd_scale", "dS_masked") in reads
    assert {("bwd_dq", "dS_scaled"), ("bwd_dk", "dS_scaled")} <= reads
    assert not any(t == "dS" for k, t in reads if k != "bwd_mask")


def test_autograd_runs_mask_and_scale_backward_out_of_place() -> None:
    """The rule's source: torch's mul and masked_fill backward return a new tensor."""
    torch = pytest.importorskip("torch")
    s = torch.randn(8, 8, requires_grad=True)
    mask = torch.ones(8, 8, dtype=torch.bool).triu_(1)
    grad = torch.randn(8, 8)
    for out in (s * 0.125, s.masked_fill(mask, float("-inf"))):
        (g,) = torch.autograd.grad(out, s, grad)
        assert g.data_ptr() != grad.data_ptr()
        assert g.untyped_storage().data_ptr() != grad.untyped_storage().data_ptr()
