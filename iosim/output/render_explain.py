"""`iosim explain softmax`'s tables: the online softmax block by block."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from iosim.analysis.explain import SoftmaxTrace
from iosim.output.tables import simple_table


def _g(x: float) -> str:
    return "−∞" if x == -math.inf else f"{x:g}".replace("-", "−")


def _f(x: float) -> str:
    return f"{x:.4f}".replace("-", "−")


def _vec(v: Sequence[float] | None) -> str:
    return "" if v is None else "[" + ", ".join(_f(x) for x in v) + "]"


def _diff(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def _blocks_table(t: SoftmaxTrace) -> Table:
    table = simple_table(f"Online softmax: {len(t.scores)} scores in blocks of {t.block}", (
        ("block", "right"), ("scores", "left"), ("block max", "right"),
        ("m_old → m_new", "left"), ("rescale", "right"), ("l_old × rescale", "right"),
        ("+ block sum", "right"), ("= running sum l", "right")))
    for s in t.steps:
        first = s.max_before == -math.inf
        table.add_row(str(s.index), ", ".join(_g(x) for x in s.scores), _g(s.block_max),
                      f"{_g(s.max_before)} → {_g(s.max_after)}",
                      "—" if first else _f(s.rescale),
                      "0" if first else _f(s.rescaled_sum), _f(s.block_sum), _f(s.sum_after))
    return table


def _output_table(t: SoftmaxTrace) -> Table:
    table = simple_table("Partial output after each block", (
        ("block", "right"), ("Õ = rescale·Õ_old + Σ exp(s − m_new)·v", "left"),
        ("O = Õ / l", "left")))
    for s in t.steps:
        table.add_row(str(s.index), _vec(s.unnormalised), _vec(s.output))
    return table


def _weights_table(t: SoftmaxTrace) -> Table:
    table = simple_table("Final weights next to a one-pass softmax", [
        (name, "right") for name in ("score", "online exp(s − m) / l", "one-pass softmax",
                                     "|difference|")])
    for s, w, o in zip(t.scores, t.weights, t.one_pass_weights, strict=True):
        table.add_row(_g(s), _f(w), _f(o), _diff(abs(w - o)))
    return table


LEGEND = ("m = running max, l = running sum, rescale = exp(m_old − m_new) (— on the first block)\n"
          "block sum = Σ exp(s − m_new) over the block's scores")


def print_trace(t: SoftmaxTrace, console: Console) -> None:
    """The trace, as `iosim explain softmax` prints it, on `console`."""
    console.print(_blocks_table(t))
    console.print(Text(LEGEND))
    console.print()
    if t.output is not None:
        console.print(_output_table(t))
    console.print(_weights_table(t))
    lines = [f"final max m = {_g(t.final_max)}, sum l = {_f(t.final_sum)}; largest weight "
             f"difference from one pass: {_diff(t.max_weight_difference)}"]
    if t.output is not None and t.one_pass_output is not None:
        lines.append(f"output O: online {_vec(t.output)}, one pass {_vec(t.one_pass_output)}; "
                     f"largest difference {_diff(t.max_output_difference or 0.0)} (float64)")
    console.print(Text("\n".join(lines)))
