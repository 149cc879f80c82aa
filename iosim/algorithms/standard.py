"""Standard attention: the FlashAttention paper's Algorithm 0, one kernel per step.

Algorithm 0 (Dao et al. 2022):
  1: Load Q, K by blocks from HBM, compute S = QKᵀ, write S to HBM.
  2: Read S from HBM, compute P = softmax(S), write P to HBM.
  3: Load P and V by blocks from HBM, compute O = PV, write O to HBM.
Per head that is 4Nd + 4N² elements (reads 3Nd + 2N², writes Nd + 2N²). Real unfused pipelines add
N×N elementwise kernels ("exacerbated by other elementwise operations applied to the attention
matrix, such as masking applied to S or dropout applied to P", §2.2); `Workload.unfused` adds them,
each one more read and write of the N×N matrix. A causal mask changes nothing here: the full S and
P are still materialised (the mask is fused into the softmax unless 'mask' is listed as unfused).
A block-sparse mask (--sparsity) changes nothing either: this pipeline is dense.

Algorithm 3 (the paper's standard backward pass), one kernel per line:
  1: Load P, dO by blocks, compute dV = PᵀdO, write dV to HBM.
  2: Load dO, V by blocks, compute dP = dO Vᵀ, write dP to HBM.
  3: Read P, dP from HBM, compute dS_ij = P_ij(dP_ij − Σ_l P_il dP_il), write dS to HBM.
  4: Load dS and K by blocks, compute dQ = dS K, write dQ to HBM.
  5: Load dS and Q by blocks, compute dK = dSᵀQ, write dK to HBM.
Per head that is 8Nd + 7N² elements (reads 5Nd + 5N², writes 3Nd + 2N²). The unfused forward
kernels have backward kernels of their own, each an N×N read and write (autograd of an eager
pipeline): dropout's multiplies dP by the kept mask Z (read again: 1 byte per element) and the
dropped P (not P) feeds line 1; mask and scale pass dS through once each, in place (read dS,
write dS: the paper names these ops, §2.2, but not their backward). An implementation that runs
them out of place (eager PyTorch's autograd: a new N×N tensor each) says so in its YAML
(`out_of_place`, analysis/impl_kernels.py): the same bytes, another tensor for the L2 model.
With GQA the dK/dV of each query head are summed over its group (grads.py).
"""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.fp8 import gemm_scales
from iosim.algorithms.grads import dkv_names, sum_dkdv
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.algorithms.segments import per_request
from iosim.inputs.workload import Workload

# The seed article's illustrative softmax cost: subtract the max, exponentiate, add to the sum,
# divide — about 5 FLOPs per score (seeds/000, "Step 2").
SOFTMAX_FLOPS_PER_SCORE = 5


def _whole(tensor: str, op: str, rows: str, cols: str, cite: str, **kw: object) -> Access:
    return Access(tensor, op, "prologue", rows, cols, cite, **kw)  # type: ignore[arg-type]


class Standard(Algorithm):
    """Standard attention (Algorithm 0, backward Algorithm 3): S = QKᵀ, P = softmax(S) and O = PV as
    separate kernels, S and P written to and read back from HBM."""

    name = "standard"
    title = "standard attention (FlashAttention paper, Algorithm 0): S and P written to HBM"
    tiled = False
    kernel_axes = frozenset({"pass_", "heads", "kv_heads", "latent_kv", "dtype", "fp8_scales",
                             "n", "prefix_len", "suffix_lens"})
    """GQA adds the dK/dV group sums; MLA's latent cache reads V as part of K; FP8 adds the
    GEMMs' scales; a shared-prefix batch makes the kernels ragged."""

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        """Alg. 0's kernels: S = QKᵀ, softmax (and the unfused scale/mask/dropout), O = PV.
        S, P and O are in O's dtype (an FP8 GEMM writes bf16; otherwise the input dtype)."""
        out = "out"
        kernels = [Kernel("qk", "S = QKᵀ", "matmul", (
            _whole("Q", "read", "q", "d", "Alg. 0 line 1: load Q by blocks"),
            _whole("K", "read", "kv", "d", "Alg. 0 line 1: load K by blocks"),
            *gemm_scales(workload, "q", "k"),
            _whole("S", "write", "q", "kv", "Alg. 0 line 1: write S to HBM", element=out),
        ), (FlopCount("matmul", "score_d", 2, "S = QKᵀ: d multiply-adds per score"),))]
        if "scale" in workload.unfused:
            kernels.append(_elementwise("scale", "S ← S/√d", "S", 1, out))
        if "mask" in workload.unfused:
            kernels.append(_elementwise("mask", "S ← mask(S)", "S", 1, out))
        kernels.append(Kernel("softmax", "P = softmax(S)", "elementwise", (
            _whole("S", "read", "q", "kv", "Alg. 0 line 2: read S from HBM", element=out),
            _whole("P", "write", "q", "kv", "Alg. 0 line 2: write P to HBM", element=out),
        ), (FlopCount("elementwise", "score", SOFTMAX_FLOPS_PER_SCORE,
                      "max, subtract, exp, sum, divide (seed 000)"),)))
        if "dropout" in workload.unfused:
            kernels.append(Kernel("dropout", "P ← dropout(P)", "elementwise", (
                _whole("P", "read", "q", "kv", "unfused dropout kernel: read P", element=out),
                _whole("P_drop", "write", "q", "kv", "unfused dropout kernel: write dropped P",
                       element=out),
                _whole("Z", "write", "q", "kv", "dropout mask kept for backward (1 byte/element)",
                       element="u8"),
            ), (FlopCount("elementwise", "score", 2, "compare with a random draw, scale"),)))
        p = "P_drop" if "dropout" in workload.unfused else "P"
        kernels.append(Kernel("pv", "O = PV", "matmul", (
            _whole(p, "read", "q", "kv", "Alg. 0 line 3: load P by blocks", element=out),
            _whole("K", "read", "kv", "dv", "Alg. 0 line 3: load V by blocks — MLA's latent "
                   "cache: V is the first d_v columns of K") if workload.latent_kv else
            _whole("V", "read", "kv", "dv", "Alg. 0 line 3: load V by blocks"),
            *gemm_scales(workload, "v"),
            _whole("O", "write", "q", "dv", "Alg. 0 line 3: write O to HBM", element=out),
        ), (FlopCount("matmul", "score_dv", 2, "O = PV: d_v multiply-adds per score"),)))
        return per_request(tuple(kernels), workload)  # a shared-prefix batch: per request

    def backward(self, workload: Workload) -> tuple[Kernel, ...]:
        """Alg. 3's kernels, in the order they run, and GQA's dK/dV group sums."""
        dropout = "dropout" in workload.unfused
        p = "P_drop" if dropout else "P"
        dk, dv = dkv_names(workload)
        kernels = [
            Kernel("bwd_dv", "dV = PᵀdO", "matmul", (
                _whole(p, "read", "q", "kv", "Alg. 3 line 1: load P by blocks"
                       + (" (the dropped P the forward multiplied with V)" if dropout else "")),
                _whole("dO", "read", "q", "dv", "Alg. 3 line 1: load dO by blocks"),
                _whole(dv, "write", "kv", "dv", "Alg. 3 line 1: write dV to HBM"),
            ), (FlopCount("matmul", "score_dv", 2, "dV = PᵀdO: d_v multiply-adds per score"),)),
            Kernel("bwd_dp", "dP = dO Vᵀ", "matmul", (
                _whole("dO", "read", "q", "dv", "Alg. 3 line 2: load dO by blocks"),
                _whole("V", "read", "kv", "dv", "Alg. 3 line 2: load V by blocks"),
                _whole("dP", "write", "q", "kv", "Alg. 3 line 2: write dP to HBM"),
            ), (FlopCount("matmul", "score_dv", 2, "dP = dO Vᵀ: d_v multiply-adds per score"),)),
        ]
        if dropout:
            kernels.append(Kernel("bwd_dropout", "dP ← dP∘Z/(1−p)", "elementwise", (
                _whole("dP", "read", "q", "kv", "backward of the unfused dropout kernel: read dP"),
                _whole("Z", "read", "q", "kv", "backward of dropout: read the mask Z the forward "
                       "kept (1 byte/element)", element="u8"),
                _whole("dP", "write", "q", "kv", "backward of dropout: write dP∘Z/(1−p)"),
            ), (FlopCount("elementwise", "score", 2, "multiply by the mask, scale"),)))
        kernels.append(Kernel("bwd_softmax", "dS = P∘(dP − D)", "elementwise", (
            _whole("P", "read", "q", "kv", "Alg. 3 line 3: read P from HBM"),
            _whole("dP", "read", "q", "kv", "Alg. 3 line 3: read dP from HBM"),
            _whole("dS", "write", "q", "kv", "Alg. 3 line 3: write dS to HBM"),
        ), (FlopCount("elementwise", "score", 4, "D = rowsum(P∘dP): 2; P∘(dP − D): 2"),)))
        if "mask" in workload.unfused:
            kernels.append(_elementwise("bwd_mask", "dS ← mask(dS)", "dS", 1))
        if "scale" in workload.unfused:
            kernels.append(_elementwise("bwd_scale", "dS ← dS/√d", "dS", 1))
        kernels += [
            Kernel("bwd_dq", "dQ = dS K", "matmul", (
                _whole("dS", "read", "q", "kv", "Alg. 3 line 4: load dS by blocks"),
                _whole("K", "read", "kv", "d", "Alg. 3 line 4: load K by blocks"),
                _whole("dQ", "write", "q", "d", "Alg. 3 line 4: write dQ to HBM"),
            ), (FlopCount("matmul", "score_d", 2, "dQ = dS K: d multiply-adds per score"),)),
            Kernel("bwd_dk", "dK = dSᵀQ", "matmul", (
                _whole("dS", "read", "q", "kv", "Alg. 3 line 5: load dS by blocks"),
                _whole("Q", "read", "q", "d", "Alg. 3 line 5: load Q by blocks"),
                _whole(dk, "write", "kv", "d", "Alg. 3 line 5: write dK to HBM"),
            ), (FlopCount("matmul", "score_d", 2, "dK = dSᵀQ: d multiply-adds per score"),)),
        ]
        return (*kernels, *sum_dkdv(workload))


def _elementwise(name: str, label: str, tensor: str, flops: int, element: str = "io") -> Kernel:
    """One extra N×N elementwise kernel of an unfused pipeline: read the matrix, write it back."""
    what = name.removeprefix("bwd_")
    kernel = f"backward of the unfused {what} kernel" if name.startswith("bwd_") else (
        f"unfused {name} kernel")
    return Kernel(name, label, "elementwise", (
        _whole(tensor, "read", "q", "kv", f"{kernel}: read {tensor}", element=element),
        _whole(tensor, "write", "q", "kv", f"{kernel}: write {tensor}", element=element),
    ), (FlopCount("elementwise", "score", flops, f"{what}: {flops} FLOP per score"),))
