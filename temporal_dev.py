"""``python temporal_dev.py``: the old path of ``python -m devstack`` (a local Temporal dev server and the
codec server, until Ctrl-C), kept for the commands and scripts that run it by that name.

The code lives in :mod:`devstack`; the names below are re-exported for callers that still import
them from here.
"""

from __future__ import annotations

import sys

from devstack.dev_server import main
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from devstack.servers import (
    DevServer,
    LocalServer,
    free_port,
    start_codec_server,
    start_dev_server,
    stop_process,
    ui_origins,
    wait_for_port,
    wait_until_serving,
)
from devstack.temporal_cli import shell_path, temporal_cli, temporal_cli_for_display

__all__ = [
    "DevServer",
    "LocalServer",
    "RehearsalStack",
    "free_port",
    "main",
    "rehearsal_stack",
    "shell_path",
    "start_codec_server",
    "start_dev_server",
    "stop_process",
    "temporal_cli",
    "temporal_cli_for_display",
    "ui_origins",
    "wait_for_port",
    "wait_until_serving",
]

if __name__ == "__main__":
    sys.exit(main())
