"""Profile the commerce MCP server children of a benchmark run (benchmark-only hook, no production code).

With ``BENCH_PROFILE_COMMERCE=DIR`` set, bench_performance.py starts every stdio commerce server under
cProfile (``python -m cProfile -o DIR/commerce-<n>.prof -m commerce_server ...``); each writes its
profile when it exits (the worker closes its stdin at shutdown). Read them with :func:`summary` or
``python -m pstats``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import pstats
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ENV = "BENCH_PROFILE_COMMERCE"


@contextlib.contextmanager
def profiled_commerce_servers() -> Iterator[Path | None]:
    """While open, stdio commerce servers start under cProfile when ``BENCH_PROFILE_COMMERCE`` names a folder."""
    folder = os.environ.get(ENV)
    if not folder:
        yield None
        return
    from activities.commerce import commerce_client

    out = Path(folder).resolve()
    out.mkdir(parents=True, exist_ok=True)
    original = commerce_client.StdioServerParameters
    numbers = itertools.count(1)

    def under_cprofile(**fields: Any) -> Any:
        args = list(fields.get("args", []))
        if args[:2] == ["-m", "commerce_server"]:
            fields["args"] = ["-m", "cProfile", "-o", str(out / f"commerce-{next(numbers)}.prof"), *args]
        return original(**fields)

    commerce_client.StdioServerParameters = under_cprofile  # type: ignore[assignment,misc]
    try:
        yield out
    finally:
        commerce_client.StdioServerParameters = original  # type: ignore[misc]


def summary(folder: Path, top: int = 25) -> str:
    """The profiles in ``folder`` combined: the top functions by internal time, then by cumulative time."""
    files = sorted(str(path) for path in folder.glob("commerce-*.prof"))
    if not files:
        return f"no commerce server profiles in {folder} (a server that did not exit cleanly writes none)"
    text = io.StringIO()
    stats = pstats.Stats(*files, stream=text)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return text.getvalue()
