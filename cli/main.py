"""The command line's entry point (``starter.py``): every command registered on :data:`cli.app.app`,
and the one place where a refusal becomes one line on stderr and an exit status.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer
from pydantic import ValidationError
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from case_tracing import flush_process_tracing
from cli.app import app, global_option_hint, quiet_broken_pipe, stdout_gone
from cli.exit_codes import ExitCode, exit_code_for_error
from cli.render import errors, one_line
from contracts.errors import SupportError

COMMAND_MODULES = (
    "audit_command",
    "local_commands",
    "review_commands",
    "verify_command",
    "case_commands",
    "conversation_commands",
    "usage_command",
    "tau2_commands",
)
"""The modules whose import registers their commands on :data:`cli.app.app`, in the order `--help`
lists them (``audit_command`` imports ``verify_command``, so ``verify`` comes first)."""
for _module in COMMAND_MODULES:
    importlib.import_module(f"cli.{_module}")


def run() -> None:
    """Entry point: every refusal is one line on stderr with the exit status of :class:`ExitCode`.

    The process ends with ``os._exit`` after flushing: the Temporal client's native runtime threads
    can otherwise crash the interpreter while it finalizes, turning a clean exit into a signal. Ctrl-C
    ends it with 130 and no traceback (typer answers an interrupt inside a command with 130 too; a
    command that started a case names it first: :func:`cli.following.saying_on_interrupt`).
    """
    code: int = ExitCode.DECIDED
    try:
        code = _run_app()
    except KeyboardInterrupt:  # Ctrl-C outside typer's own handling (it answers 130 too): no traceback
        code = ExitCode.INTERRUPTED
    try:
        flush_process_tracing()  # os._exit skips the exporter's own shutdown
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            code = quiet_broken_pipe()
        sys.stderr.flush()
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    os._exit(int(code))


def _run_app() -> int:
    """The command's exit status; a refusal is printed here as one line on stderr."""
    code: int = ExitCode.DECIDED
    try:
        returned = app(standalone_mode=False)
        code = returned if isinstance(returned, int) else ExitCode.DECIDED
    except typer.Exit as exit_:
        code = exit_.exit_code
    except NoArgsIsHelpError as error:
        error.show()
        code = error.exit_code
    except BrokenPipeError:  # stdout's reader left (``status CASE | head``): nothing more to say
        code = quiet_broken_pipe()
    except SystemExit:  # typer's own answer to a broken stdout pipe (exit 1), or a deliberate exit
        if not stdout_gone():
            raise
        code = quiet_broken_pipe()
    except TyperException as error:  # a usage error: unknown command, bad option value, ...
        hint = global_option_hint(error, sys.argv[1:])
        errors.print(hint or f"error: {' '.join(error.format_message().split())} (see --help)")
        code = ExitCode.REFUSED
    except typer.Abort:
        errors.print("error: aborted")
        code = ExitCode.REFUSED
    except SupportError as error:
        errors.print(f"error: {error}")
        code = exit_code_for_error(error)
    except ValidationError as error:
        errors.print(f"error: {one_line(error)}")
        code = ExitCode.REFUSED
    except Exception as error:  # a bug, not bad input: still one line unless asked for more
        if os.environ.get("SUPPORT_DEBUG"):
            raise
        errors.print(f"error: unexpected {type(error).__name__}: {error} (SUPPORT_DEBUG=1 shows the traceback)")
        code = ExitCode.UNEXPECTED
    return code
