"""The `iosim` command: parse flags, call one core function, render. Errors are one line, exit 2."""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import os
import sys
from typing import Any

import click

from iosim._version import __version__
from iosim.errors import IosimError

COMMAND_MODULES = {
    "calibrate": "iosim.cli.calibrate_cmd",
    "compare": "iosim.cli.compare_cmd",
    "explain": "iosim.cli.explain_cmd",
    "gpus": "iosim.cli.gpus_cmd",
    "measure": "iosim.cli.measure_cmd",
    "models": "iosim.cli.models_cmd",
    "report": "iosim.cli.report_cmd",
    "roofline": "iosim.cli.roofline_cmd",
    "sweep": "iosim.cli.sweep_cmd",
    "verify": "iosim.cli.verify_cmd",
}
"""Each command lives in its own module, imported only when that command runs (or for --help):
`iosim compare` must start fast and never load what sweeps, plots or calibration need."""


class IosimGroup(click.Group):
    """A click group whose every failure is one line on stderr and an exit status, no traceback."""

    one_shot = False
    """Whether this process runs one command and exits (`main`, the console script): see
    `_import_command`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not (for --help)."""
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command `name`, importing its module on first use; None when there is no such command."""
        if name not in self.commands and name in COMMAND_MODULES:
            # its decorator registers it on `cli`
            _import_command(COMMAND_MODULES[name], one_shot=self.one_shot)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """click's resolution, with a "did you mean" hint for an unknown command."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from iosim.inputs.suggest import did_you_mean

            ctx.fail(f"No such command '{name}'.{did_you_mean(name, self.list_commands(ctx))}")
        return super().resolve_command(ctx, args)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Run the command line; every error becomes one `Error: ...` line on stderr and exit status 2
        (usage and bad input) or the error's own status, never a traceback."""
        _drop_unreadable_sizes()
        _replace_unencodable()
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else "")
            result = 0
        except click.UsageError as exc:
            hint = f" Try '{exc.ctx.command_path} --help'." if exc.ctx else ""
            _fail(f"{exc.format_message()}{hint}", 2)
        except click.ClickException as exc:
            _fail(exc.format_message(), 2 if exc.exit_code == 1 else exc.exit_code)
        except IosimError as exc:
            _fail(exc.message_for(flag_style), 2)
        except click.Abort:
            _fail("aborted", 1)
        except OSError as exc:  # click itself ends a closed pipe (EPIPE): status 1, nothing said
            _fail(_os_error_line(exc), 2)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


def _import_command(module: str, *, one_shot: bool) -> None:
    """Import a command's module. In a one-shot process (the console script: one command, then
    exit) with the cyclic garbage collector paused, and what the process holds then frozen out
    of its sight (`gc.freeze`, as Python's docs suggest for a process that forks after its
    imports): the imports make tens of thousands of objects that live as long as the process
    (modules, classes, functions, numpy's tables) and no cyclic garbage, so every collection
    that would walk them, during the command and at exit, is work for nothing (15–35 ms of
    `iosim compare`'s ≈ 200 ms of CPU). Objects made after are collected as usual. In-process
    callers (tests, `CliRunner`) import plainly."""
    if not one_shot:
        importlib.import_module(module)
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module(module)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def _drop_unreadable_sizes() -> None:
    """Forget a $COLUMNS or $LINES that is not an ASCII number: rich reads them with
    str.isdigit() and int(), so COLUMNS=² (a digit to isdigit, no number to int) was a
    ValueError traceback from every table; unset, the terminal's own size is used."""
    import os

    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and not (value.isascii() and value.isdigit()):
            del os.environ[name]


SYMBOLS = "⌈⌉×→…–·²µ≤✓"
"""Characters iosim's tables and lines print (rule, units, marks)."""


def _replace_unencodable() -> None:
    """Let a stdout or stderr whose encoding cannot write iosim's symbols write them as '?':
    PYTHONIOENCODING=latin-1 or a Windows cp1252 console made every table a UnicodeEncodeError
    traceback (exit 1). An encoding that holds them (UTF-8) is left as it is."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or getattr(stream, "errors", "strict") != "strict":
            continue
        try:
            SYMBOLS.encode(getattr(stream, "encoding", None) or "utf-8")
        except (UnicodeEncodeError, LookupError):
            reconfigure(errors="replace")


FLAG_NAMES = {"pass_": "pass", "sram_bytes": "sram", "algorithms": "algo"}
"""Core parameters whose flag is not the parameter's name with dashes for underscores."""


def flag_style(name: str, value: str | None) -> str:
    """A core error's parameter as the CLI spells it: `--kv-heads 3`, or `--kv-heads` alone."""
    flag = "--" + FLAG_NAMES.get(name, name).replace("_", "-")
    if value is None:
        return flag
    if value[:1] + value[-1:] in ("()", "[]"):  # a Python tuple or list: the flag's comma list
        value = ",".join(part.strip() for part in value[1:-1].split(",") if part.strip())
    return f"{flag} {value}"


_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EBADF, errno.EFBIG, errno.EROFS,
                  errno.EDQUOT}
"""What a write to stdout meets on a full disk (/dev/full), a dead terminal or a closed
descriptor."""


def _os_error_line(exc: OSError) -> str:
    """An operating-system error as one line: the file it names, or the output that could not
    be written (a table to /dev/full was a traceback). stdout is then pointed at /dev/null so
    that the interpreter's last flush of the unwritten text does not print a second error."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    if exc.errno not in _OUTPUT_ERRNOS:
        return reason
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor: StringIO
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return f"cannot write the output: {reason}; write it to a file on a disk with room, or a pipe"


def _fail(message: str, status: int) -> None:
    click.echo(f"Error: {' '.join(message.split())}", err=True)
    sys.exit(status)


@click.group(cls=IosimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iosim")
def cli() -> None:
    """Exact HBM traffic of attention (standard vs FlashAttention) and its roofline time.

    \b
    Examples:
      iosim compare --n 4096 --gpu a100
      iosim compare --n 8192 --d 128 --heads 32 --gpu h100 --causal --format json
      iosim gpus
    """


def main() -> None:
    """The `iosim` console script (and `python -m iosim`): one command, then the process ends."""
    cli.one_shot = True
    cli()


__all__ = ["COMMAND_MODULES", "FLAG_NAMES", "cli", "flag_style", "main"]
