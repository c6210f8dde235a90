"""``python -m reviewer_console [--host 127.0.0.1] [--port 8090] [--state-dir DIR] [--origin URL]``.

Reaches Temporal with the same environment configuration as starter.py (``TEMPORAL_ADDRESS``, ...,
``SUPPORT_TASK_QUEUE``) and reads the directory of the state dir (or ``SUPPORT_DIRECTORY``). A bad
setting is one line on stderr and exit status 2. Bound to an address beyond loopback (``--host
0.0.0.0``) it says so in one line on stderr, as the codec server does: it speaks plain http, so it
belongs on 127.0.0.1 behind an https proxy.

Its access log (uvicorn's, one line per request) never holds an enrollment token: a link carries it
in its fragment, which no browser sends, and a ``token=`` in a query string (an old link's form) is
written ``token=[redacted]`` (:class:`RedactTokens`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from starlette.applications import Starlette

from case_client import CaseClient
from contracts.errors import SupportError
from contracts.listening import beyond_loopback_warning, is_loopback_host, shown_host
from keystore import directory_location
from keystore.directory_file import DirectorySource
from knowledge.check import require_valid_knowledge
from reviewer_console.app import build_app
from reviewer_console.config import DEFAULT_ORIGIN, ConsoleConfig
from reviewer_console.store import ConsoleStore

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))
PROG = "reviewer_console"
ACCESS_LOGGER = "uvicorn.access"
cli = typer.Typer(add_completion=False)


class RedactTokens(logging.Filter):
    """Writes every ``token=`` value of a logged request line as ``[redacted]``: an enrollment link of
    the old form (``/enroll?token=...``) must not leave a usable secret in the access log."""

    QUERY_TOKEN = re.compile(r"([?&]token=)[^&#\s]*", re.IGNORECASE)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self.redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        return True

    @classmethod
    def redact(cls, text: str) -> str:
        return cls.QUERY_TOKEN.sub(r"\1[redacted]", text)


def uvicorn_config(app: Starlette, host: str, port: int) -> uvicorn.Config:
    """uvicorn's settings for the console, its access log redacted (:class:`RedactTokens`)."""
    config = uvicorn.Config(app, host=host, port=port, log_level="info")  # configures uvicorn's loggers
    access = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(existing, RedactTokens) for existing in access.filters):
        access.addFilter(RedactTokens())
    return config


def beyond_loopback(host: str) -> str | None:
    """The warning line for ``--host`` beyond loopback (``0.0.0.0``, a public address), else None."""
    if is_loopback_host(host):
        return None
    return beyond_loopback_warning(
        PROG,
        shown_host(host),
        "it speaks plain http, so session cookies and enrollment links cross the network readable",
        "keep it on 127.0.0.1 behind an https reverse proxy (--origin https://...)",
    )


async def serve(host: str, port: int, state_dir: Path, config: ConsoleConfig) -> None:
    directory = DirectorySource(directory_location(state_dir))
    directory.current()  # a missing or invalid directory is said before anything is served (and kept)
    cases = await CaseClient.connect()
    app = build_app(cases, directory, ConsoleStore.in_state_dir(state_dir), config)
    await uvicorn.Server(uvicorn_config(app, host, port)).serve()


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
        if (exposed := beyond_loopback(host)) is not None:
            typer.echo(exposed, err=True)
        asyncio.run(serve(host, port, state_dir, config))
    except SupportError as error:
        typer.echo(f"reviewer_console: {error.message}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    cli()
