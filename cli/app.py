"""The command line's shared parts: the typer application, its global options and their settings.

``starter.py`` is the entry point; the commands live in :mod:`cli.local_commands` (no Temporal needed),
``starter.py`` (cases on Temporal), :mod:`cli.review_commands` (a reviewer's signed decisions) and
:mod:`cli.verify_command` (the chain of proof, offline).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from contracts.identity import Identity, resolve_profile

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))
WAIT_SECONDS = float(os.environ.get("SUPPORT_WAIT_SECONDS", "300"))
"""How long a command that runs a case waits for it to settle (``SUPPORT_WAIT_SECONDS``)."""

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
eval_app = typer.Typer(no_args_is_help=True, help="Evaluations: retrieval quality and end-to-end cases.")
app.add_typer(eval_app, name="eval")


@dataclass(frozen=True)
class Settings:
    identity: Identity
    state_dir: Path


@app.callback()
def main(
    ctx: typer.Context,
    profile: Annotated[str, typer.Option(help="Demonstration profile: alice, bob, chen, lin, mei.")] = "alice",
    state_dir: Annotated[Path, typer.Option(help="Where databases and case records live.")] = DEFAULT_STATE_DIR,
) -> None:
    """Qinghe support cases: durable, human-approved, fictional."""
    ctx.obj = Settings(identity=resolve_profile(profile), state_dir=state_dir)


def settings_of(ctx: typer.Context) -> Settings:
    settings: Settings = ctx.obj
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return settings
