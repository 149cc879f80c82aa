"""The `iosim` command: parse flags, call one core function, render. Errors are one line, exit 2."""

from __future__ import annotations

import sys
from typing import Any

import click

from iosim._version import __version__
from iosim.errors import IosimError


class IosimGroup(click.Group):
    """A click group whose every failure is one line on stderr and an exit status, no traceback."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
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
            _fail(str(exc), 2)
        except click.Abort:
            _fail("aborted", 1)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


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
    cli()


from iosim.cli import (  # noqa: E402  (commands register on `cli`)
    calibrate_cmd,
    compare_cmd,
    explain_cmd,
    gpus_cmd,
    report_cmd,
    roofline_cmd,
    sweep_cmd,
    verify_cmd,
)

__all__ = ["calibrate_cmd", "cli", "compare_cmd", "explain_cmd", "gpus_cmd", "main", "report_cmd",
           "roofline_cmd", "sweep_cmd", "verify_cmd"]
