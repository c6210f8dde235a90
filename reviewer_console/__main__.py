"""``python -m reviewer_console [--host 127.0.0.1] [--port 8090] [--state-dir DIR] [--origin URL]``.

Reaches Temporal with the same environment configuration as starter.py (``TEMPORAL_ADDRESS``, ...,
``SUPPORT_TASK_QUEUE``) and reads the directory of the state dir (or ``SUPPORT_DIRECTORY``). A bad
setting is one line on stderr and exit status 2. Bound to an address beyond loopback (``--host
0.0.0.0``) it says so in one line on stderr, as the codec server does: it speaks plain http, so it
belongs on 127.0.0.1 behind an https proxy.

Its log lines, uvicorn's included, take the service's one format (``SUPPORT_LOG_FORMAT``: plain, or
JSON lines; contracts/logs.py) at ``SUPPORT_LOG_LEVEL`` (default INFO: one access line per request).
Its access log never holds an enrollment token: a link carries it in its fragment, which no browser
sends, and a ``token=`` in a query string (an old link's form) is written ``token=[redacted]``
(:class:`RedactTokens`).
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
from contracts.logs import Service, configure_logging, log_level
from keystore import directory_location
from keystore.directory_file import DirectorySource
from keystore.enrollment import CONSOLE_PORT_ENV, console_origin
from knowledge.check import require_valid_knowledge
from reviewer_console.app import build_app
from reviewer_console.config import ConsoleConfig
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


def uvicorn_config(app: Starlette, host: str, port: int, log_level: int = logging.INFO) -> uvicorn.Config:
    """uvicorn's settings for the console, its access log redacted (:class:`RedactTokens`). uvicorn
    sets its loggers' level but installs no handler of its own (``log_config=None``): its lines go
    through the process's one handler (:func:`contracts.logs.configure_logging`)."""
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=log_level)
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


async def serve(host: str, port: int, state_dir: Path, config: ConsoleConfig, log_level: int = logging.INFO) -> None:
    directory = DirectorySource(directory_location(state_dir))
    directory.current()  # a missing or invalid directory is said before anything is served (and kept)
    cases = await CaseClient.connect()
    app = build_app(cases, directory, ConsoleStore.in_state_dir(state_dir), config)
    await uvicorn.Server(uvicorn_config(app, host, port, log_level)).serve()


@cli.command()
def main(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=1, max=65535, envvar=CONSOLE_PORT_ENV, help="Port to listen on (CONSOLE_PORT).")
    ] = 8090,
    state_dir: Annotated[Path, typer.Option(help="The state dir (its directory and console.db).")] = DEFAULT_STATE_DIR,
    origin: Annotated[
        str | None,
        typer.Option(
            help="The origin browsers use: it sets the passkeys' relying party (its host); default CONSOLE_ORIGIN, "
            "else http://localhost:CONSOLE_PORT, else http://localhost:8090 (as `starter.py directory enroll`)."
        ),
    ] = None,
) -> None:
    """Serve the reviewer console."""
    try:
        level = log_level(default="INFO")
        configure_logging(Service.CONSOLE, level=level)  # a bad SUPPORT_LOG_FORMAT or level: exit 2
        config = ConsoleConfig.for_origin(origin or console_origin(os.environ))
        require_valid_knowledge()  # the cited pages it shows come from SUPPORT_KNOWLEDGE_DIR when set
        if (exposed := beyond_loopback(host)) is not None:
            typer.echo(exposed, err=True)
        asyncio.run(serve(host, port, state_dir, config, level))
    except SupportError as error:
        typer.echo(f"reviewer_console: {error.message}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    cli()
