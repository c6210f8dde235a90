"""The commerce MCP server: transaction facts for the fictional merchants Qinghe and south.

It runs as its own process (stdio or Streamable HTTP), owns the commerce database and re-checks
every write itself. Nothing in it is real: merchants, customers, orders and receipts are fictional.

Its public face, for the command line and the dev stack, is the few names below: where the
database is (:func:`database_url`), an engine for it (:func:`make_engine`) and the fixture rows
(:func:`seed_fixture`). They load on first use, so that importing :mod:`commerce_server.tokens`
alone, as the worker does, loads neither the MCP server nor the database.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from commerce_server.db import database_url, make_engine
    from commerce_server.seed import seed_fixture

_PUBLIC = {
    "database_url": "commerce_server.db",
    "make_engine": "commerce_server.db",
    "seed_fixture": "commerce_server.seed",
}
"""Each public name and the module that defines it."""

__all__ = ["database_url", "make_engine", "seed_fixture"]


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
