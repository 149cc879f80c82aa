"""`--splits auto`'s table: splitkv's predicted time per split count, the best pick and FA2's."""

from __future__ import annotations

from rich.console import Console

from iosim.analysis.split_choice import SplitChoice
from iosim.output.numbers import fmt_time
from iosim.output.plain import TextTable
from iosim.output.tables import compact_table, rich_markdown


def split_table(choice: SplitChoice) -> TextTable:
    """The rich table: one row per split count FA2 would run (JSON has the same rows with their
    HBM bytes and chain terms)."""
    best, fa2 = choice.best.splits, choice.heuristic
    table = compact_table(
        f"splitkv per split count {choice.bound} (the decoding time model; roof: "
        f"compare's roofline); blocks: key blocks per split; waves of the GPU's resident programs; "
        f"counts that leave a split empty skipped",
        [("splits", "right"), ("blocks", "right"), ("waves", "right"),
         ("kernel", "right"), ("combine", "right"), ("time", "right"), ("÷best", "right"),
         ("roof", "right"), ("pick", "left")])
    for r in choice.rows:
        if not r.eligible:
            continue
        mark = ", ".join(m for m, on in (("best", r.splits == best), ("FA2", r.splits == fa2))
                         if on)
        table.add_row(str(r.splits), str(r.blocks_per_split), str(r.waves),
                      fmt_time(r.split_kernel_s),
                      fmt_time(r.combine_s) if r.combine_s else "—", fmt_time(r.time_s),
                      f"{r.time_s / choice.best.time_s:.2f}×", fmt_time(r.compare_s), mark)
    return table


def verdict(choice: SplitChoice) -> str:
    """One line: the best pick and the heuristic's, with the time between them."""
    best, fa2 = choice.best, choice.row(choice.heuristic)
    same = ("the same pick" if fa2.splits == best.splits
            else f"{choice.heuristic_slowdown:.2f}× the best's time")
    return (f"Best: {best.splits} splits ({fmt_time(best.time_s)}). FlashAttention-2's "
            f"num_splits_heuristic: {fa2.splits} ({fmt_time(fa2.time_s)}, {same}).")


def print_split_choice(choice: SplitChoice, console: Console) -> None:
    """The table and the verdict line on the console."""
    console.print()
    console.print(split_table(choice))
    console.print(verdict(choice), highlight=False)


def split_choice_markdown(choice: SplitChoice) -> str:
    """The table as Markdown and the verdict line."""
    return rich_markdown(split_table(choice)) + "\n" + verdict(choice) + "\n"
