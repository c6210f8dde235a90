"""What the rules of more than one request kind share: the case language and a search of nested JSON.

The rehearsal model reads only the JSON context of a request, never a database or a file, so a fact
(an order, a shipment, a product) is found by shape wherever the context happens to carry it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

CJK = re.compile(r"[\u4e00-\u9fff]")


def case_language(context: dict[str, Any]) -> str:
    """``en`` or ``zh``: the context's own language, else Chinese when the question has CJK characters."""
    language = context.get("language")
    if language in ("en", "zh"):
        return language
    return "zh" if CJK.search(context.get("question", "")) else "en"


def find(value: Any, predicate: Callable[[dict[str, Any]], bool], depth: int = 0) -> dict[str, Any] | None:
    """The first dict (depth-first, a few levels deep) that satisfies ``predicate``."""
    if depth > 4:
        return None
    if isinstance(value, dict):
        if predicate(value):
            return value
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return None
    for child in children:
        found = find(child, predicate, depth + 1)
        if found is not None:
            return found
    return None


def find_key(value: Any, key: str) -> Any:
    found = find(value, lambda d: key in d)
    return found.get(key) if found else None
