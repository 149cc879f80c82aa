"""`iosim verify`'s table: the workload, the outputs, the gradients and the three counts."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from iosim.analysis.verification import Verification
from iosim.output.plain import TextTable
from iosim.output.tables import compact_table, simple_table

OK, BAD = "✓", "✗"


def _mark(good: bool) -> str:
    return OK if good else BAD


def _sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def _header(v: Verification) -> Text:
    w = v.workload
    heads = f"{w.heads} heads" + (f" / {w.kv_heads} kv" if w.kv_heads != w.heads else "")
    kv = f" (kv {w.n_kv})" if w.n_kv != w.n else ""
    mask = "causal" if w.causal else "non-causal"
    if w.sparsity != 1:
        mask += f", block-sparse s = {w.sparsity:g}"
    if w.window is not None:
        mask += f", window {w.window}"
    if w.seqlens is not None:
        mask += f", {len(w.seqlens)} packed sequences"
    extra = f", unfused {','.join(w.unfused)}" if w.unfused else ""
    if "dropout" in w.unfused:
        extra += f" (p = {v.dropout_p:g})"
    tiled = [a for a in v.algorithms if a.block_q is not None]
    d_v = f" (d_v {w.d_v})" if w.d_v != w.d else ""
    d_v += ", latent KV (V = K[:, :d_v])" if w.latent_kv else ""
    d_v += (f", counted as {w.dtype} ({w.fp8_scales} scales, O {w.output_dtype})"
            if w.fp8_scales else "")
    inputs = "Q, K" if w.latent_kv else "Q, K, V"
    lines = [f"workload  batch {w.batch} × {heads}, N {w.n}{kv}, d {w.d}{d_v}, {mask}, pass "
             f"{w.pass_}{extra}",
             f"data      {v.dtype}, standard normal {inputs}{', dO' if w.pass_ != 'fwd' else ''}, "
             f"seed {v.seed}"]
    if tiled:
        a = tiled[0]
        both = " (both passes)" if w.pass_ != "fwd" else ""
        lines.append(f"blocks    B_r × B_c = {a.block_q} × {a.block_kv}{both}")
        split = next((x.splits for x in v.algorithms if x.splits is not None), None)
        if split is not None:
            lines.append(f"splits    splitkv: {split} KV split{'s' if split > 1 else ''} per query "
                         f"block" + (", combined by splitkv_combine" if split > 1 else ""))
        lines.append(f"SRAM      {v.sram_bytes:,} B: {v.sram_source}")
    return Text("\n".join(lines))


def _output_table(v: Verification) -> Table:
    table = simple_table("Output and what is held at once", (
        ("algorithm", "left"), ("max |x − standard|", "right"),
        ("max |x − float64 formula|", "right"), ("scores held at once", "right"),
        ("SRAM peak", "right"), ("", "left")))
    if all(a.name != "standard" for a in v.algorithms):
        table.add_row("standard (reference)", "", _sci(v.standard_max_abs_err_vs_float64),
                      f"{v.standard_peak_scores:,}", "—", "")
    for a in v.algorithms:
        sram = "—" if a.sram_peak_bytes is None else f"{a.sram_peak_bytes:,} B"
        table.add_row(a.name, _sci(a.max_abs_diff_vs_standard), _sci(a.max_abs_err_vs_float64),
                      f"{a.peak_scores:,}", sram, _mark(a.output_agrees))
    return table


def _gradients_table(v: Verification) -> Table:
    table = simple_table("Gradients (backward pass)", (
        ("algorithm", "left"), ("gradient", "left"), ("max |x − standard|", "right"),
        ("max |x − float64 formula|", "right"), ("largest |float64|", "right"), ("", "left")))
    for a in v.algorithms:
        for i, g in enumerate(a.gradients):
            table.add_row(a.name if i == 0 else "", g.name, _sci(g.max_abs_diff_vs_standard),
                          _sci(g.max_abs_err_vs_float64), f"{g.scale:.3g}" if g.scale > 1 else "≤ 1",
                          _mark(g.agrees), end_section=i == len(a.gradients) - 1)
    return table


def _counts_table(v: Verification) -> TextTable:
    table = compact_table("HBM traffic in elements, counted three ways", (
        ("algorithm", "left"), ("kernel", "left"), ("tensor", "left"), ("op", "left"),
        ("closed form", "right"), ("tile walk", "right"), ("executor", "right"), ("", "left")))
    for a in v.algorithms:
        for i, t in enumerate(a.terms):
            table.add_row(a.name if i == 0 else "", t.kernel, t.tensor, t.op,
                          f"{t.closed_form:,}", f"{t.walk:,}", f"{t.executor:,}", _mark(t.agree))
        closed, walked, executed = a.totals()
        table.add_row("", "total", "", "", f"{closed:,}", f"{walked:,}", f"{executed:,}",
                      _mark(closed == walked == executed), end_section=True)
    return table


def _footer(v: Verification) -> Text:
    lines = ["scores held: standard materialises one head's N_q × N_kv scores, a tiled kernel one "
             "B_r × B_c tile"]
    for a in v.algorithms:
        if a.stream_equal:
            lines.append(f"{a.name}: the executor issued the walk's {a.accesses:,} tile loads and "
                         f"stores one for one, in the same order {OK}")
        else:
            lines.append(f"{a.name}: access streams differ at {a.stream_difference} {BAD}")
    if v.dtype == "float64":
        lines.append("bytes: float64 is not a dtype the model counts bytes for, so counts are "
                     "compared in elements only")
    else:
        good = all(a.bytes_agree for a in v.algorithms)
        lines.append(f"bytes: every tensor the executor stored has the model's bytes per element "
                     f"{_mark(good)}" if good else f"bytes per element differ from the model {BAD}")
    if any(a.gradients for a in v.algorithms):
        lines.append(f"gradients: dK, dV per KV head; tolerance {v.algorithms[0].tolerance:g} × "
                     f"max(1, largest |float64|)")
    if v.ok:
        if any(a.gradients for a in v.algorithms):
            lines.append("All counts agree; every output and gradient equals standard attention's "
                         "to rounding.")
        else:
            lines.append("All counts agree; every output equals standard attention to rounding.")
    else:
        bad = [a.name for a in v.algorithms if not a.ok]
        lines.append(f"MISMATCH in {', '.join(bad)}")
    return Text("\n".join(lines))


def print_verification(v: Verification, console: Console) -> None:
    """The whole verification, as `iosim verify` prints it, on `console`."""
    console.print(_header(v))
    console.print()
    console.print(_output_table(v))
    if any(a.gradients for a in v.algorithms):
        console.print(_gradients_table(v))
    console.print(_counts_table(v))
    console.print(_footer(v))
