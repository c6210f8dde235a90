"""One problem of a knowledge directory, as ``FILE:LINE: problem``, and how a field's line is found."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from contracts.knowledge import DocumentHeader


@dataclass(frozen=True)
class Problem:
    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class PageInfo:
    """Where a page is and what its document says (a rule's page must match it)."""

    header: DocumentHeader
    file: Path
    line: int


def field_line(lines: Sequence[str], pattern: str, *, offset: int = 1) -> int:
    """The line number of the first of ``lines`` matching ``pattern`` (``lines[0]`` is line ``offset``);
    the first line when none matches (a missing field is reported where the block starts)."""
    compiled = re.compile(pattern)
    for index, line in enumerate(lines):
        if compiled.search(line):
            return index + offset
    return max(offset - 1, 1)


def validation_problems(
    path: Path, error: ValidationError, line_of: Callable[[str], int], *, what: str
) -> list[Problem]:
    """One problem per field pydantic refused, on that field's line."""
    problems = []
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "missing":
            problems.append(Problem(path, line_of(name), f"the {what} lacks {name!r}"))
        elif item["type"] == "extra_forbidden":
            problems.append(Problem(path, line_of(name), f"unknown {what} field {name!r}"))
        else:
            problems.append(Problem(path, line_of(name), f"{what} field {name!r}: {item['msg']}"))
    return problems
