"""``python -m customer_channel [--host 127.0.0.1] [--port 8092] [--state-dir DIR] [--demo-sign-in]``.

Reaches Temporal with the same environment configuration as starter.py (``TEMPORAL_ADDRESS``, ...,
``SUPPORT_TASK_QUEUE``), reads the directory of the state dir (or ``SUPPORT_DIRECTORY``) and, where
``SUPPORT_APPLICANT_JWKS_URL`` names one, the outside issuer of customers' ID tokens. A bad setting is
one line on stderr and exit status 2. ``--demo-sign-in`` turns on the demo sign-in (any customer of
the directory, by name, with tokens signed by the state dir's issuer key): for a developer's machine,
never a shared one. Bound beyond loopback it says so in one line on stderr: it speaks plain http.

Its log lines take the service's one format (``SUPPORT_LOG_FORMAT``, ``SUPPORT_LOG_LEVEL``). A
credential travels only in the ``Authorization`` header, never in an address, so the access log holds
none.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from case_client import TemporalTarget, connect
from contracts.credentials import ISSUER_KID
from contracts.errors import SupportError
from contracts.listening import beyond_loopback_warning, is_loopback_host, shown_host
from contracts.logs import Service, configure_logging, log_level
from customer_channel.app import build_app
from customer_channel.backend import TemporalConversations
from customer_channel.config import ChannelConfig
from customer_channel.credentials import BearerVerifier
from keystore import directory_location, load_private_key, private_key_path
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer
from keystore.signers import KeyFileSigner

DEFAULT_STATE_DIR = Path(os.environ.get("SUPPORT_STATE_DIR", ".state"))
CHAT_PORT_ENV = "CHAT_PORT"
DEFAULT_PORT = 8092
PROG = "customer_channel"
cli = typer.Typer(add_completion=False)
CHANNEL_SERVICE = Service.CHANNEL
"""The ``service`` its log lines name: ``channel`` once :class:`contracts.logs.Service` lists it."""


async def serve(host: str, port: int, state_dir: Path, config: ChannelConfig, level: int) -> None:
    directory = DirectorySource(directory_location(state_dir))
    directory.current()  # a missing or invalid directory is said before anything is served
    if config.demo_sign_in:  # the demo sign-in signs with the state dir's issuer key: a missing one, too
        load_private_key(private_key_path(state_dir, ISSUER_KID))
    verifier = BearerVerifier(directory, OutsideIssuer.from_environment())
    target = TemporalTarget.from_env()
    conversations = TemporalConversations(await connect(target), target.task_queue)
    signer = KeyFileSigner(state_dir) if config.demo_sign_in else None
    app = build_app(conversations, directory, config, verifier=verifier, signer=signer)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, log_level=level)).serve()


@cli.command()
def main(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=1, max=65535, envvar=CHAT_PORT_ENV, help="Port to listen on (CHAT_PORT).")
    ] = DEFAULT_PORT,
    state_dir: Annotated[Path, typer.Option(help="The state dir (its directory; its issuer key for the demo).")] = (
        DEFAULT_STATE_DIR
    ),
    demo_sign_in: Annotated[
        bool,
        typer.Option(
            "--demo-sign-in",
            help="Serve the demo sign-in: any customer of the directory signs in by name (a developer's machine only).",
        ),
    ] = False,
) -> None:
    """Serve the customer channel (HTTP API and web chat)."""
    try:
        level = log_level(default="INFO")
        configure_logging(CHANNEL_SERVICE, level=level)  # a bad SUPPORT_LOG_FORMAT or level: exit 2
        OutsideIssuer.from_environment()  # a bad SUPPORT_APPLICANT_* setting: exit 2
        if not is_loopback_host(host):
            exposed = "it speaks plain http, so credentials cross the network readable"
            if demo_sign_in:
                exposed += ", and its demo sign-in lets anyone act as any customer"
            typer.echo(
                beyond_loopback_warning(
                    PROG, shown_host(host), exposed, "keep it on 127.0.0.1 behind an https reverse proxy"
                ),
                err=True,
            )
        asyncio.run(serve(host, port, state_dir, ChannelConfig(demo_sign_in=demo_sign_in), level))
    except SupportError as error:
        typer.echo(f"{PROG}: {error.message}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        logging.getLogger(PROG).info("stopped")


if __name__ == "__main__":
    cli()
