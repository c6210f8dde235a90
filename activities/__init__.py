"""Activities: every piece of I/O the workflow delegates (model calls, tools, commerce, records).

Its public face outside the worker, for the command line: :func:`open_stdio_client`, the commerce MCP
client it talks to the commerce server with, and :class:`LanguagePreferences`, the remembered reply
languages. They load on first use, so that importing one activity module loads no other.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from activities.case.preferences import LanguagePreferences
    from activities.commerce.commerce_client import open_stdio_client

_PUBLIC = {
    "open_stdio_client": "activities.commerce.commerce_client",
    "LanguagePreferences": "activities.case.preferences",
}
"""Each public name and the module that defines it."""

__all__ = ["LanguagePreferences", "open_stdio_client"]


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
