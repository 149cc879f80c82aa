"""`iosim measure`'s table: predicted beside measured, kernel by kernel — time, DRAM bytes
(iosim's L2-aware estimate against ncu's count), L2 bytes (the L2-oblivious count against ncu's
L2 traffic) — then the call's total, and one line on what the model got wrong.

Built from a point dict (cli/measure_cmd.measurement_point, the line `--record` appends), so
that it renders without a GPU. Stacked (a kernel's name, then one row per quantity) to fit 80
columns whatever the kernel names.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from iosim.calibrate.measure_record import counted_kernels
from iosim.output.numbers import fmt_bytes, fmt_time

ERROR_LINE = 0.15
"""Above this relative error (the call's time, or its DRAM bytes where ncu counted them), one
line says what the model got wrong."""

WIDTH = 80
NAME, CELL, ERROR = 34, 14, 9


def short_name(kernel: str) -> str:
    """A kernel's function name without its namespace, templates and parameters:
    'void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<…> >(…)' → 'flash_fwd_kernel'."""
    text = kernel.removeprefix("void ").strip()
    text = re.split(r"[<(]", text, maxsplit=1)[0]
    return text.rsplit("::", 1)[-1] or kernel[:NAME]


def relative_error(predicted: float | None, measured: float | None) -> float | None:
    """(predicted − measured) / measured, None where either is missing or nothing was measured."""
    if predicted is None or measured is None or measured <= 0:
        return None
    return (predicted - measured) / measured


def _row(what: str, predicted: str, measured: str, error: float | None) -> str:
    err = "—" if error is None else f"{error:+.0%}"
    if err in ("+0%", "-0%"):  # within half a per cent: no sign that says over or under
        err = "0%"
    return f"  {what:<{NAME - 2}}{predicted:>{CELL}}{measured:>{CELL}}{err:>{ERROR}}".rstrip()


def _bytes(n: float | None) -> str:
    return "—" if n is None else fmt_bytes(n)


def _time(s: float | None) -> str:
    return "—" if s is None else fmt_time(s)


def _fit(text: str) -> str:
    return text if len(text) <= WIDTH else text[:WIDTH - 1] + "…"


def counter_line(point: dict[str, Any]) -> str:
    """Which counters the table has: ncu's, or why there are none (at most 80 columns; the
    record keeps ncu's whole message)."""
    counters = point.get("counters")
    counters = counters if isinstance(counters, dict) else {}
    status = str(counters.get("status", ""))
    if status == "ok":
        words = str(counters.get("ncu", "")).removeprefix("Version ").split()
        version = words[0][:24] if words else ""  # '2025.3.1.0', without its build
        return _fit(f"ncu counters read{f' (ncu {version})' if version else ''}: one more call "
                    f"between two L2 evicts")
    if status == "off":
        return "ncu counters off (--no-counters): DRAM and L2 bytes not measured"
    if status in ("", "unavailable"):
        return "no ncu (Nsight Compute) on PATH: DRAM and L2 bytes not measured"
    if "ERR_NVGPUCTRPERM" in status:
        return "ncu refused: no permission for GPU counters (ERR_NVGPUCTRPERM): run as root"
    return _fit(f"ncu counters not read, {status}")


def kernel_rows(point: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel: predicted and measured time, DRAM and L2 bytes (None where not
    known). Paired by launch order when the launches and the prediction count the same
    kernels; else the measured kernels alone, predicted '—'."""
    predicted, timed = point["predicted_kernels"], point["measured_kernels"]
    counted = counted_kernels(point)
    if counted is not None and len(counted) != len(timed):
        counted = None  # ncu's run launched other kernels than the timed one: totals only
    paired = len(predicted) == len(timed)
    rows = []
    for i, m in enumerate(timed):
        p = predicted[i] if paired else None
        c = counted[i] if counted is not None else None
        rows.append({
            "name": (f"{p['label']} · " if p else "") + short_name(m["name"]),
            "label": p["label"] if p else short_name(m["name"]),
            "time": (p["time_s"] if p else None, m["time_s"]),
            "dram": (p.get("dram_bytes") if p else None, c["dram_bytes"] if c else None),
            "l2": (p["hbm_bytes"] if p else None, c["l2_bytes"] if c else None),
            "utilisation": p.get("utilisation") if p else None})
    return rows


def totals(point: dict[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """The call's predicted and measured time (do_bench median), DRAM and L2 bytes (ncu, all
    the call's kernels and the closing evict's write-backs)."""
    predicted = point["predicted_kernels"]
    counted = counted_kernels(point)
    drams = [p.get("dram_bytes") for p in predicted]
    return {
        "time": (point["predicted_time_s"], point["measured_time_s"]),
        "dram": (None if any(d is None for d in drams) else sum(drams),
                 sum(c["dram_bytes"] for c in counted) if counted else None),
        "l2": (sum(p["hbm_bytes"] for p in predicted),
               sum(c["l2_bytes"] for c in counted) if counted else None)}


def _block(title: str, values: dict[str, tuple[Any, Any]], time_label: str) -> list[str]:
    lines = [_fit(title)]
    t, d, l2 = values["time"], values["dram"], values["l2"]
    lines.append(_row(time_label, _time(t[0]), _time(t[1]), relative_error(*t)))
    lines.append(_row("DRAM bytes", _bytes(d[0]), _bytes(d[1]), relative_error(*d)))
    lines.append(_row("L2 bytes (L2↔SM)", _bytes(l2[0]), _bytes(l2[1]), relative_error(*l2)))
    return lines


def measurement_lines(point: dict[str, Any]) -> list[str]:
    """The whole table, every line at most 80 columns (the 'model:' sentence wrapped)."""
    predicted, measured = point["predicted_kernels"], point["measured_kernels"]

    def kernels(n: int) -> str:
        return f"{n} kernel{'' if n == 1 else 's'}"

    lines = [_fit(f"{point['impl']} on {point['gpu']} ({point['profile']} profile): "
                  f"{kernels(len(measured))} measured, {kernels(len(predicted))} predicted"),
             counter_line(point),
             f"{'':<{NAME}}{'predicted':>{CELL}}{'measured':>{CELL}}{'error':>{ERROR}}"]
    rows = kernel_rows(point)
    for row in rows:
        lines += _block(row["name"], row, "time (one call, cold L2)")
    if len(predicted) != len(measured):
        lines.append(f"predicted: {', '.join(p['label'] for p in predicted)}"[:WIDTH])
    lines += _block("total", totals(point), "time (do_bench median)")
    counted = counted_kernels(point)
    if counted is not None and len(counted) != len(measured):
        lines.append(_fit(f"ncu saw {kernels(len(counted))}, torch.profiler "
                          f"{len(measured)}: bytes for the call only"))
    elif len(rows) > 1 and counted is not None:
        lines.append("DRAM per kernel: ncu's count while it ran; what is still dirty after "
                     "the last")
        lines.append("kernel is written back by the closing evict and counted to it")
    wrong = what_went_wrong(point, rows)
    if wrong:  # one sentence, wrapped at 80 columns
        lines += textwrap.wrap(wrong, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return lines


def what_went_wrong(point: dict[str, Any], rows: list[dict[str, Any]] | None = None
                    ) -> str | None:
    """One line on the largest cause of a time or DRAM error above 15 % (None when neither)."""
    rows = kernel_rows(point) if rows is None else rows
    predicted, measured = point["predicted_kernels"], point["measured_kernels"]
    total = totals(point)
    time_error = relative_error(*total["time"]) or 0.0
    parts = []
    if abs(time_error) > ERROR_LINE:
        if len(predicted) != len(measured):
            parts.append(f"{len(measured)} kernels ran, {len(predicted)} were predicted — the "
                         f"profile misses launches "
                         f"({', '.join(short_name(k['name'])[:24] for k in measured)}); add "
                         f"them to its extra_kernels")
        else:
            worst = max(rows, key=lambda r: abs(r["time"][0] - r["time"][1]))
            side = "fast" if time_error < 0 else "slow"
            use = worst["utilisation"]
            parts.append(f"{time_error:+.0%} overall, predicted too {side}; the largest gap is "
                         f"{worst['label']} ({_time(worst['time'][0])} predicted, "
                         f"{_time(worst['time'][1])} measured"
                         f"{f', utilisation {use:.0%}' if use is not None else ''}): its "
                         f"efficiency or occupancy is off")
    dram_total = relative_error(*total["dram"])
    if dram_total is not None and abs(dram_total) > ERROR_LINE:
        # judged on the call's total, which is exact: per kernel, a write-back can land in a
        # later kernel than the one that wrote it (the table's note)
        counted = [r for r in rows if relative_error(*r["dram"]) is not None]
        row: dict[str, Any] = max(counted, key=lambda r: abs(r["dram"][0] - r["dram"][1])) \
            if counted else {"label": "the call", "dram": total["dram"]}
        why = ("charges re-reads the L2 caught" if dram_total > 0
               else "misses re-reads or write-backs")
        parts.append(f"DRAM bytes {dram_total:+.0%} for the call, the largest gap on "
                     f"{row['label']} ({_bytes(row['dram'][0])} predicted, "
                     f"{_bytes(row['dram'][1])} counted): the L2 estimate {why}")
    return f"model: {'; '.join(parts)}" if parts else None
