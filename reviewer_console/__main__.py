"""``python -m reviewer_console [--host 127.0.0.1] [--port 8090] [--state-dir DIR] [--origin URL]``.

Reaches Temporal with the same environment configuration as starter.py (``TEMPORAL_ADDRESS``, ...,
``SUPPORT_TASK_QUEUE``) and reads the directory of the state dir (or ``SUPPORT_DIRECTORY``). A bad
setting is one line on stderr and exit status 2.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from case_client import CaseClient
from contracts.errors import SupportError
from keystore import directory_location
from keystore.directory_file import DirectorySource
from knowledge.check import require_valid_knowledge
from reviewer_console.app import build_app
from reviewer_console.config import DEFAULT_ORIGIN, ConsoleConfig
from reviewer_console.store import ConsoleStore

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))
cli = typer.Typer(add_completion=False)


async def serve(host: str, port: int, state_dir: Path, config: ConsoleConfig) -> None:
    directory = DirectorySource(directory_location(state_dir))
    directory.current()  # a missing or invalid directory is said before anything is served (and kept)
    cases = await CaseClient.connect()
    app = build_app(cases, directory, ConsoleStore.in_state_dir(state_dir), config)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info")).serve()


@cli.command()
def main(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8090,
    state_dir: Annotated[Path, typer.Option(help="The state dir (its directory and console.db).")] = DEFAULT_STATE_DIR,
    origin: Annotated[
        str, typer.Option(help="The origin browsers use: it sets the passkeys' relying party (its host).")
    ] = DEFAULT_ORIGIN,
) -> None:
    """Serve the reviewer console."""
    try:
        config = ConsoleConfig.for_origin(origin)
        require_valid_knowledge()  # the cited pages it shows come from SUPPORT_KNOWLEDGE_DIR when set
        asyncio.run(serve(host, port, state_dir, config))
    except SupportError as error:
        typer.echo(f"reviewer_console: {error.message}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    cli()
