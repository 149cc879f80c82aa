"""What `verify` found (verify.py): per algorithm, each traffic term three ways (closed form, tile
walk, executor, in elements and bytes), the first access where the executor's stream leaves the
walk's, the outputs' and gradients' errors; as a table (output/render_verify.py) or JSON.
"""

from __future__ import annotations

from typing import Any

from iosim._version import __version__
from iosim.algorithms.traffic import Op
from iosim.inputs.workload import Workload, mask_fields
from iosim.record import Record

SCHEMA = "iosim.verify/1"


class TermCheck(Record):
    """One (kernel, tensor, op) term counted three ways, in elements."""

    kernel: str
    tensor: str
    op: Op
    cite: str
    element_bytes: int
    """Bytes per element in the model (the closed form's)."""
    closed_form: int
    walk: int
    executor: int
    executor_element_bytes: int | None
    """Bytes per element as the executor stored the tensor (None if it never touched it)."""

    @property
    def agree(self) -> bool:
        """Whether closed form, walk and executor count the same elements."""
        return self.closed_form == self.walk == self.executor


class GradientCheck(Record):
    """One gradient (dQ, dK or dV) of one algorithm against standard's and the float64 formula."""

    name: str
    max_abs_diff_vs_standard: float
    max_abs_err_vs_float64: float
    scale: float
    """max(1, max |float64 gradient|): the tolerance is relative to it."""
    tolerance: float

    @property
    def agrees(self) -> bool:
        """Whether the gradient equals standard's and the float64 formula's within tolerance."""
        return self.max_abs_diff_vs_standard <= self.tolerance * self.scale


class AlgorithmCheck(Record):
    """One algorithm verified: its blocks, each term counted three ways, the walk's accesses against
    the executor's, its output's and gradients' errors, and the most scores and SRAM it held."""

    name: str
    title: str
    block_q: int | None
    block_kv: int | None
    terms: tuple[TermCheck, ...]
    accesses: int
    """Tile loads and stores in the walk."""
    stream_equal: bool
    """The executor issued the walk's accesses, one for one, in the same order."""
    stream_difference: str | None
    bytes_checked: bool
    max_abs_diff_vs_standard: float
    max_abs_err_vs_float64: float
    peak_scores: int
    sram_peak_bytes: int | None
    sram_budget_bytes: int | None
    tolerance: float
    gradients: tuple[GradientCheck, ...] = ()
    """dQ, dK, dV when the pass has a backward."""
    splits: int | None = None
    """Split-KV's programs per query block (splitkv only)."""

    @property
    def counts_agree(self) -> bool:
        """Whether every term agrees three ways."""
        return all(t.agree for t in self.terms) and self.stream_equal and self.bytes_agree

    @property
    def bytes_agree(self) -> bool:
        """Whether every stored tensor has the model's bytes per element."""
        return not self.bytes_checked or all(
            t.executor_element_bytes == t.element_bytes for t in self.terms)

    @property
    def output_agrees(self) -> bool:
        """Whether the output equals standard's and the float64 formula's within tolerance."""
        return self.max_abs_diff_vs_standard <= self.tolerance

    @property
    def gradients_agree(self) -> bool:
        """Whether every gradient agrees."""
        return all(g.agrees for g in self.gradients)

    @property
    def ok(self) -> bool:
        """Whether everything checked agrees."""
        return self.counts_agree and self.output_agrees and self.gradients_agree

    def totals(self) -> tuple[int, int, int]:
        """(closed form, walk, executor) elements over all terms."""
        return (sum(t.closed_form for t in self.terms), sum(t.walk for t in self.terms),
                sum(t.executor for t in self.terms))


class Verification(Record):
    """What `verify` returns: the workload run, the dtype, seed, dropout and SRAM budget (bytes), one
    AlgorithmCheck per algorithm, and standard attention's peak scores and float64 error;
    `ok` says whether every check passed, `to_dict()` is the JSON of `iosim verify --format json`."""

    workload: Workload
    """The shape verified (its dtype is the model dtype of `dtype`)."""
    dtype: str
    seed: int
    dropout_p: float
    sram_bytes: int
    sram_source: str
    algorithms: tuple[AlgorithmCheck, ...]
    standard_peak_scores: int
    """Scores the reference run of standard attention held at once (N_q·N_kv)."""
    standard_max_abs_err_vs_float64: float

    @property
    def ok(self) -> bool:
        """Whether everything checked agrees."""
        return all(a.ok for a in self.algorithms)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON (schema iosim.verify/1)."""
        w = self.workload
        return {
            "schema": SCHEMA,
            "iosim_version": __version__,
            "ok": self.ok,
            "workload": {"batch": w.batch, "heads": w.heads, "kv_heads": w.kv_heads, "n": w.n,
                         "n_kv": w.n_kv, "d": w.d, "d_v": w.d_v, "latent_kv": w.latent_kv,
                         "fp8_scales": w.fp8_scales, "causal": w.causal, "pass": w.pass_,
                         "unfused": list(w.unfused), "sparsity": w.sparsity,
                         **mask_fields(w)},
            "dtype": self.dtype,
            "seed": self.seed,
            "dropout_p": self.dropout_p if "dropout" in w.unfused else 0.0,
            "sram": {"bytes": self.sram_bytes, "source": self.sram_source},
            "standard_reference": {
                "peak_scores": self.standard_peak_scores,
                "max_abs_err_vs_float64": self.standard_max_abs_err_vs_float64,
            },
            "algorithms": [{
                "name": a.name,
                "block_q": a.block_q,
                "block_kv": a.block_kv,
                "splits": a.splits,
                "ok": a.ok,
                "counts_agree": a.counts_agree,
                "stream_equal": a.stream_equal,
                "stream_difference": a.stream_difference,
                "accesses": a.accesses,
                "bytes_checked": a.bytes_checked,
                "max_abs_diff_vs_standard": a.max_abs_diff_vs_standard,
                "max_abs_err_vs_float64": a.max_abs_err_vs_float64,
                "tolerance": a.tolerance,
                "peak_scores": a.peak_scores,
                "sram_peak_bytes": a.sram_peak_bytes,
                "sram_budget_bytes": a.sram_budget_bytes,
                "gradients": [{
                    "name": g.name, "max_abs_diff_vs_standard": g.max_abs_diff_vs_standard,
                    "max_abs_err_vs_float64": g.max_abs_err_vs_float64, "scale": g.scale,
                    "tolerance": g.tolerance * g.scale, "agree": g.agrees,
                } for g in a.gradients],
                "terms": [{
                    "kernel": t.kernel, "tensor": t.tensor, "op": t.op, "cite": t.cite,
                    "element_bytes": t.element_bytes, "closed_form": t.closed_form,
                    "walk": t.walk, "executor": t.executor,
                    "executor_element_bytes": t.executor_element_bytes, "agree": t.agree,
                } for t in a.terms],
            } for a in self.algorithms],
        }
