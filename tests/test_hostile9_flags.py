"""Every command and every flag of `iosim`, found by walking click's command tree (a flag added
later is fuzzed without editing this file), fed hostile values: 0, negatives, -0, 1e30, 2^63,
nan, inf, '', spaces, non-numbers, 400 digits, list syntax gone wrong. Each case is held to
tests/hostile.py's properties (check_run: exit 0 or 2, one `Error:` line, no traceback,
strict finite JSON, nothing written on a refusal, under 5 s).

The default run takes one hostile value per flag, rotating through the table (~150 cases, a
few seconds); `pytest -m slow` runs every flag × every value. Then the flag combinations that
must be refused, each naming a flag, and the output paths (hostile9, 2 Dec 2026).
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from iosim.cli import cli
from tests.hostile import check_run, invoke, workdir

BASE: dict[str, list[str]] = {
    "calibrate": ["calibrate", "--gpu", "h200", "--out", "o.yaml"],
    "compare": ["compare", "--gpu", "h100", "--n", "1024", "--format", "json"],
    "explain softmax": ["explain", "softmax", "--scores", "1,2,3"],
    "gpus show": ["gpus", "show", "h100"],
    "measure": ["measure", "--gpu", "h200", "--n", "1024", "--impl", "flex"],
    "models show": ["models", "show", "llama-3.1-8b"],
    "report": ["report", "--gpu", "h100", "--n", "1024", "--out", "rep"],
    "roofline": ["roofline", "--gpu", "h100", "--n", "1024", "--out", "figs"],
    "sweep": ["sweep", "--gpu", "h100", "--n", "1024", "--format", "json"],
    "verify": ["verify", "--n", "64", "--format", "json"],
}
"""A valid invocation of each command (a leaf of the tree) that a flag's value is added to."""

HOSTILE = ["0", "-1", "-0", "1e30", str(2**63), "nan", "inf", "", "  ", "abc", "1.5",
           "9" * 400, "1,,2", "1..0", "64,", "none", "auto", "-", "--n"]
"""What a hostile user types for any flag (a number flag, a name, a path or a list)."""

DRAWN = {"roofline", "report"}
"""Commands whose accepted cases draw figures (seconds each): their flags shared with compare
are validated by compare's cases (one workload_from), so only their own flags are fuzzed."""


def _leaves(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()
            ) -> list[tuple[str, click.Command]]:
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            out += _leaves(command, ctx, (*path, name))
        else:
            out.append((" ".join((*path, name)), command))
    return out


COMMANDS = dict(_leaves(cli, click.Context(cli)))
_COMPARE_FLAGS = {p.opts[0] for p in COMMANDS["compare"].params}


def _value_params(name: str) -> list[click.Parameter]:
    """The parameters of a command that take a value (switches take none), in order."""
    params = [p for p in COMMANDS[name].params
              if not getattr(p, "is_flag", False) and p.name != "help"]
    if name in DRAWN:
        params = [p for p in params if p.opts[0] not in _COMPARE_FLAGS]
    return params


def _with_value(name: str, param: click.Parameter, value: str) -> list[str]:
    args = list(BASE[name])
    if isinstance(param, click.Argument):
        return [*args[:-1], value]
    flag = param.opts[0]
    if flag in args:  # the base's own value replaced
        at = args.index(flag)
        del args[at:at + 2]
    return [*args, flag, value]


def _sampled(name: str, i: int, param: click.Parameter) -> str:
    """The default run's one value for a flag: rotating through HOSTILE; for a drawing command
    one that must be refused (an accepted one draws for seconds): '' for a path, else 400
    digits."""
    if name in DRAWN:
        return "" if isinstance(param.type, click.Path) else "9" * 400
    return HOSTILE[(i * 7 + len(name)) % len(HOSTILE)]


def _cases(every_value: bool) -> list[list[str]]:
    cases = []
    for name in sorted(BASE):
        for i, param in enumerate(_value_params(name)):
            values = HOSTILE if every_value else [_sampled(name, i, param)]
            cases += [_with_value(name, param, v) for v in values]
    return cases


def test_every_command_has_a_base_invocation() -> None:
    # a new command is fuzzed once it has a valid invocation here
    assert set(COMMANDS) == set(BASE)
    for name, args in BASE.items():
        assert not args[0].startswith("-") and " ".join(args).startswith(name)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in DRAWN else n
                                  for n in sorted(BASE)])
def test_each_base_invocation_runs_or_refuses_for_want_of_a_gpu(name: str) -> None:
    # the bases are valid: what a flag's value does is then that value's doing
    with workdir() as folder:
        outcome = check_run(BASE[name], folder)
    if name in ("calibrate", "measure"):  # no GPU (nor torch) on the CI machine
        assert outcome.code in (0, 2)
    else:
        assert outcome.code == 0, outcome.err


@pytest.mark.parametrize("args", _cases(every_value=False), ids=lambda a: " ".join(a)[:80])
def test_each_flag_with_a_hostile_value(args: list[str]) -> None:
    with workdir() as folder:
        check_run(args, folder)


@pytest.mark.slow
@pytest.mark.parametrize("args", _cases(every_value=True), ids=lambda a: " ".join(a)[:80])
def test_every_flag_with_every_hostile_value(args: list[str]) -> None:
    with workdir() as folder:
        check_run(args, folder)


# -- combinations that must be refused, each naming the flag to change ------------------------

DECODE = ["compare", "--gpu", "h200", "--n", "1", "--n-kv", "4096"]
PREFIX = ["compare", "--gpu", "h200", "--n", "1", "--n-kv", "552", "--batch", "2",
          "--prefix-len", "512", "--suffix-lens", "16,40"]
REFUSED: list[tuple[list[str], str]] = [
    (["compare", "--gpu", "h100", "--n", "1024", "--seqlens", "100,200"], "--seqlens"),
    (["compare", "--gpu", "h100", "--n", "1024", "--latent-kv", "--heads", "32", "--kv-heads",
      "8"], "--kv-heads"),
    (["compare", "--gpu", "h100", "--n", "1024", "--dtype", "fp8_e4m3", "--pass", "bwd"],
     "--dtype"),
    (["compare", "--gpu", "h100", "--n", "1024", "--dtype", "fp8_e5m2", "--pass", "fwdbwd"],
     "--dtype"),
    (["compare", "--gpu", "h100", "--n", "1024", "--fp8-scales", "block"], "--fp8-scales"),
    ([*DECODE, "--splits", "auto", "--pass", "bwd"], "--splits"),
    ([*DECODE, "--page-size", "16", "--pass", "bwd"], "--page-size"),
    ([*DECODE, "--page-size", "16", "--window", "64"], "--page-size"),
    ([*DECODE, "--latent-kv", "--d", "576", "--d-v", "512", "--kv-heads", "1", "--pass", "bwd"],
     "--latent-kv"),
    (["compare", "--gpu", "h100", "--n", "1024", "--prefix-len", "512", "--suffix-lens", "16"],
     "--n"),
    (["compare", "--gpu", "h100", "--n", "1", "--suffix-lens", "16,40"], "--prefix-len"),
    ([*PREFIX[:-4], "--prefix-len", "500", "--suffix-lens", "16,40"], "--n-kv"),
    (["compare", "--gpu", "h100", "--n", "1024", "--layer", "local"], "--model"),
    (["compare", "--gpu", "h100", "--n", "1024", "--model", "llama-3.1-8b", "--heads", "7"],
     "--heads"),
    (["compare", "--gpu", "h100", "--n", "1024", "--sram", "64KiB", "--sram-elements", "100"],
     "--sram"),
    (["compare", "--gpu", "h100", "--n", "1024", "--profile", "measured"], "--profile"),
    (["calibrate", "--gpu", "h200", "--out", "o.yaml", "--budget", "60"], "--budget"),
    # before (hostile9): accepted; --sparsity 1e-9 was counted as s = 0/1 (no block visited)
    # and a causal flash2 was timed at "inf s"
    (["compare", "--gpu", "h200", "--n", "1024", "--causal", "--sparsity", "1e-9"],
     "--sparsity"),
    (["sweep", "--gpu", "h200", "--n", "1024", "--sparsity", "1e-9,0.5"], "--sparsity"),
    # before (hostile9): verify's cascade, which draws no dropout mask, was 4.8e-2 from
    # standard attention (exit 1, "ok": false); compare counted it
    ([*PREFIX, "--unfused", "dropout"], "--prefix-len"),
    (["verify", *PREFIX[3:], "--unfused", "dropout"], "--prefix-len"),
]


@pytest.mark.parametrize(("args", "flag"), REFUSED, ids=lambda a: " ".join(a)[-60:]
                         if isinstance(a, list) else a)
def test_a_combination_that_cannot_be_counted_is_refused_naming_a_flag(args: list[str],
                                                                       flag: str) -> None:
    with workdir() as folder:
        outcome = check_run(args, folder)
    assert outcome.code == 2, outcome.out[:300]
    assert flag in outcome.err


# -- output paths ------------------------------------------------------------------------------

PATH_FLAGS = [(BASE["roofline"], "--out"), (BASE["roofline"], "--record"),
              (BASE["report"], "--out"), (["sweep", "--gpu", "h100", "--n", "64,128"], "--plot"),
              (BASE["calibrate"], "--out"), (BASE["calibrate"], "--record"),
              (BASE["calibrate"], "--from"), (BASE["calibrate"], "--report"),
              (BASE["measure"], "--record")]


@pytest.mark.parametrize(("base", "flag"), PATH_FLAGS, ids=lambda a: a if isinstance(a, str)
                         else a[0])
@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_path_is_refused_not_taken_for_the_current_folder(base: list[str], flag: str,
                                                                   empty: str) -> None:
    # before (hostile9): `roofline --out ""` and `sweep --plot ""` wrote their figures into the
    # folder the command ran in, `--record ""` read it (".: is a folder")
    args = [a for i, a in enumerate(base) if a != flag and (i == 0 or base[i - 1] != flag)]
    with workdir() as folder:
        outcome = check_run([*args, flag, empty], folder)
        assert outcome.code == 2 and flag in outcome.err and "path is empty" in outcome.err
        assert not any(folder.iterdir())


def test_sweep_plot_makes_no_folder_when_there_is_nothing_to_plot() -> None:
    # before (hostile9): an empty folder `figs` was left behind
    with workdir() as folder:
        outcome = invoke(["sweep", "--gpu", "h100", "--n", "1024", "--plot", "figs"])
        assert outcome.code == 0 and "nothing to plot" in outcome.err
        assert not (folder / "figs").exists()


def test_sweep_plot_refuses_to_overwrite_figures_without_force() -> None:
    with workdir() as folder:
        (folder / "figs").mkdir()
        mine = folder / "figs" / "time_vs_n.png"
        mine.write_bytes(b"mine")
        outcome = check_run(["sweep", "--gpu", "h100", "--n", "64,128", "--plot", "figs"],
                             folder)
        assert outcome.code == 2 and "--force" in outcome.err
        assert mine.read_bytes() == b"mine"
        assert sorted(p.name for p in Path(folder, "figs").iterdir()) == ["time_vs_n.png"]
