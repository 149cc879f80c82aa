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
"""

from __future__ import annotations

from iosim.algorithms.base import Algorithm
from iosim.algorithms.loopnest import Access, FlopCount, Kernel
from iosim.workload import Workload

# The seed article's illustrative softmax cost: subtract the max, exponentiate, add to the sum,
# divide — about 5 FLOPs per score (seeds/000, "Step 2").
SOFTMAX_FLOPS_PER_SCORE = 5


def _whole(tensor: str, op: str, rows: str, cols: str, cite: str, **kw: object) -> Access:
    return Access(tensor, op, "prologue", rows, cols, cite, **kw)  # type: ignore[arg-type]


class Standard(Algorithm):
    name = "standard"
    title = "standard attention (FlashAttention paper, Algorithm 0): S and P written to HBM"
    tiled = False

    def forward(self, workload: Workload) -> tuple[Kernel, ...]:
        kernels = [Kernel("qk", "S = QKᵀ", "matmul", (
            _whole("Q", "read", "q", "d", "Alg. 0 line 1: load Q by blocks"),
            _whole("K", "read", "kv", "d", "Alg. 0 line 1: load K by blocks"),
            _whole("S", "write", "q", "kv", "Alg. 0 line 1: write S to HBM"),
        ), (FlopCount("matmul", "score_d", 2, "S = QKᵀ: d multiply-adds per score"),))]
        if "scale" in workload.unfused:
            kernels.append(_elementwise("scale", "S ← S/√d", "S", 1))
        if "mask" in workload.unfused:
            kernels.append(_elementwise("mask", "S ← mask(S)", "S", 1))
        kernels.append(Kernel("softmax", "P = softmax(S)", "elementwise", (
            _whole("S", "read", "q", "kv", "Alg. 0 line 2: read S from HBM"),
            _whole("P", "write", "q", "kv", "Alg. 0 line 2: write P to HBM"),
        ), (FlopCount("elementwise", "score", SOFTMAX_FLOPS_PER_SCORE,
                      "max, subtract, exp, sum, divide (seed 000)"),)))
        if "dropout" in workload.unfused:
            kernels.append(Kernel("dropout", "P ← dropout(P)", "elementwise", (
                _whole("P", "read", "q", "kv", "unfused dropout kernel: read P"),
                _whole("P", "write", "q", "kv", "unfused dropout kernel: write dropped P"),
                _whole("Z", "write", "q", "kv", "dropout mask kept for backward (1 byte/element)",
                       element="u8"),
            ), (FlopCount("elementwise", "score", 2, "compare with a random draw, scale"),)))
        kernels.append(Kernel("pv", "O = PV", "matmul", (
            _whole("P", "read", "q", "kv", "Alg. 0 line 3: load P by blocks"),
            _whole("V", "read", "kv", "d", "Alg. 0 line 3: load V by blocks"),
            _whole("O", "write", "q", "d", "Alg. 0 line 3: write O to HBM"),
        ), (FlopCount("matmul", "score_d", 2, "O = PV: d multiply-adds per score"),)))
        return tuple(kernels)


def _elementwise(name: str, label: str, tensor: str, flops: int) -> Kernel:
    """One extra N×N elementwise kernel of an unfused pipeline: read the matrix, write it back."""
    return Kernel(name, label, "elementwise", (
        _whole(tensor, "read", "q", "kv", f"unfused {name} kernel: read {tensor}"),
        _whole(tensor, "write", "q", "kv", f"unfused {name} kernel: write {tensor}"),
    ), (FlopCount("elementwise", "score", flops, f"{name}: {flops} FLOP per score"),))
