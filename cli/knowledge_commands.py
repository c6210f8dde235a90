"""``starter.py knowledge``: check a merchant's knowledge directory (documents, skills, refund rules)
before ``SUPPORT_KNOWLEDGE_DIR`` points the worker, the commerce server and the reviewer console at it.

The checking itself is :func:`knowledge.check.check_knowledge`; this module only prints its answer:
one ``FILE:LINE: problem`` line per problem on stderr and exit 2, or one summary line and exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.exit_codes import ExitCode

knowledge_app = typer.Typer(
    no_args_is_help=True,
    help="A knowledge directory: policy documents, skills and refund rules (docs/knowledge.md).",
)


@knowledge_app.command("check")
def check_command(
    directory: Annotated[
        Path | None,
        typer.Argument(help="The knowledge directory to check (default: the packaged knowledge).", show_default=False),
    ] = None,
) -> None:
    """Check headers, versions, effective dates, page ids, skill and refund-rule references."""
    from knowledge.check import check_knowledge  # the parsers load only for this command
    from knowledge.location import PACKAGED

    root = directory if directory is not None else PACKAGED.root
    if not root.is_dir():
        typer.echo(f"knowledge: {root} is not a directory", err=True)
        raise typer.Exit(ExitCode.REFUSED)
    report = check_knowledge(root)
    for problem in report.problems:
        typer.echo(str(problem), err=True)
    if report.problems:
        raise typer.Exit(ExitCode.REFUSED)
    typer.echo(report.summary())
