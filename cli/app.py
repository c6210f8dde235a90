"""The command line's shared parts: the typer application, its global options and their settings.

``starter.py`` is the entry point (:func:`cli.main.run`); the commands live in :mod:`cli.local_commands`
(no Temporal needed), :mod:`cli.case_commands` (cases on Temporal), :mod:`cli.review_commands` (a
reviewer's signed decisions), :mod:`cli.verify_command` (the chain of proof, offline) and
:mod:`cli.audit_command` (the case from its history alone).
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated

import typer
from typer._click.utils import PacifyFlushWrapper
from typer.exceptions import TyperException

from cli import action_policy_commands  # noqa: F401  (registers directory allow-action and deny-action)
from cli.directory_commands import directory_app
from cli.knowledge_commands import knowledge_app
from contracts.identity import Identity

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))
WAIT_SECONDS = float(os.environ.get("SUPPORT_WAIT_SECONDS", "300"))
"""How long a command that runs a case waits for it to settle (``SUPPORT_WAIT_SECONDS``)."""

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
eval_app = typer.Typer(no_args_is_help=True, help="Evaluations: retrieval quality and end-to-end cases.")
app.add_typer(eval_app, name="eval")
app.add_typer(directory_app, name="directory")
app.add_typer(knowledge_app, name="knowledge")


@dataclass(frozen=True)
class Settings:
    profile: str
    state_dir: Path

    @cached_property
    def identity(self) -> Identity:
        """The person ``--profile`` names, as the directory (``SUPPORT_DIRECTORY`` or the state dir's)
        lists them; a name the directory does not list is refused (``unknown_person``)."""
        from keystore import directory_location, load_directory

        return load_directory(directory_location(self.state_dir)).identity(self.profile)


@app.callback()
def main(
    ctx: typer.Context,
    profile: Annotated[
        str, typer.Option(help="Who you are: a person of the directory (the demo's alice, bob, chen, lin, mei).")
    ] = "alice",
    state_dir: Annotated[Path, typer.Option(help="Where databases and case records live.")] = DEFAULT_STATE_DIR,
) -> None:
    """Qinghe support cases: durable, human-approved, fictional."""
    ctx.obj = Settings(profile=profile, state_dir=state_dir)


def settings_of(ctx: typer.Context) -> Settings:
    settings: Settings = ctx.obj
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return settings


def stdout_gone() -> bool:
    """Whether typer met a broken pipe on stdout: it then wraps stdout to silence the flush at exit and
    exits 1, which is no failure of the command (``status CASE | head``)."""
    return isinstance(sys.stdout, PacifyFlushWrapper)


def quiet_broken_pipe() -> int:
    """Exit 0 without a word when stdout's reader has gone: point stdout at devnull (Python's own
    advice for SIGPIPE), so that the flush at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


GLOBAL_OPTIONS = ("--profile", "--state-dir")


def global_option_hint(error: TyperException, argv: list[str]) -> str | None:
    """For a global option given after the subcommand, one line with the command as it must be typed
    (``put --profile before the command: starter.py --profile chen review ...``); else ``None``."""
    option = getattr(error, "option_name", None)
    if not isinstance(option, str) or option.split("=", 1)[0] not in GLOBAL_OPTIONS:
        return None
    moved: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in GLOBAL_OPTIONS:
            moved.append(arg)
            if "=" not in arg:
                moved.append(next(args, ""))
        else:
            rest.append(arg)
    fixed = shlex.join(["starter.py", *filter(None, moved), *rest])
    return f"error: put {option.split('=', 1)[0]} before the command: {fixed}"
