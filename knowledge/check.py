"""Check a knowledge directory before anything reads it: one ``FILE:LINE: problem`` per problem.

The loaders (:mod:`knowledge.passages`, :mod:`knowledge.skills`, :mod:`knowledge.refund_quote`) stop at
the first problem and name no line; a merchant editing their own policies needs every problem with its
line. So this module scans the files itself, line by line, for what the loaders require (the header,
its version and effective dates, well-formed pages numbered p01, p02, ... each with ``## en`` then
``## zh``) and for what only the whole directory can show (a skill or a refund rule citing a page that
does not exist, or exists at another version or for another tenant). The loaders still run as a last
check on every file that passed, so nothing they would refuse is ever reported clean.

A document or skill that cannot be read as UTF-8 text, or that holds a NUL byte anywhere (front-matter or
page text), is one problem on the line of its first NUL and is read no further: a NUL is never text a
customer or a model should see, and it would pass every line rule below.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from contracts.directory import NAME_PATTERN
from contracts.errors import ConfigurationError, ContractError
from contracts.knowledge import DocumentHeader, KnowledgeErrorCode
from knowledge.action_terms import check_action_terms
from knowledge.check_rules import check_rules
from knowledge.location import KNOWLEDGE_DIR_ENV, KnowledgeLocation, knowledge_location
from knowledge.passages import MAX_PARAGRAPH_CHARS, parse_document
from knowledge.problems import PageInfo, Problem, field_line, validation_problems
from knowledge.skills import parse_skill

DOCUMENT_ID = re.compile(r"^[A-Z][A-Z0-9_]*$")
VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]*$")
PAGE_NUMBER = re.compile(r"^p\d{2}$")
PAGE_REFERENCE = re.compile(r"\b[A-Z][A-Z0-9_]*:p\d{2}\b")
_PAGE_HEADING = re.compile(r"^# (\S+) \| (.+?) \| (.+?)\s*$")
_LANGUAGES = ("en", "zh")


@dataclass
class KnowledgeReport:
    root: Path
    problems: list[Problem] = field(default_factory=list)
    documents: int = 0
    pages: int = 0
    skills: int = 0
    rule_tenants: list[str] = field(default_factory=list)

    def summary(self) -> str:
        rules = ", ".join(self.rule_tenants) or "none"
        return (
            f"knowledge {self.root}: {self.documents} documents, {self.pages} pages, {self.skills} skills, "
            f"refund rules for {rules}: no problems"
        )


def check_knowledge(root: Path) -> KnowledgeReport:
    """Every problem of the knowledge directory ``root`` (the layout of docs/knowledge.md). A document
    whose header or pages are refused is not read for its pages, and references to it (``broken``) are
    not reported a second time."""
    location = KnowledgeLocation(Path(root), packaged=False)
    report = KnowledgeReport(root=location.root)
    pages: dict[str, PageInfo] = {}
    broken: set[str] = set()
    if not location.documents.is_dir():
        report.problems.append(
            Problem(location.documents, 1, "missing: the documents/ folder holds the *.md documents")
        )
    else:
        for path in sorted(location.documents.glob("*.md")):
            found = _check_document(path, report.problems)
            report.documents += 1
            pages.update(found)
            if not found:
                broken.add(path.stem)
        if report.documents == 0:
            report.problems.append(Problem(location.documents, 1, "no *.md documents"))
    report.pages = len(pages)
    for path in sorted(location.skills.glob("*/SKILL.md")):
        report.skills += 1
        _check_skill(path, pages, broken, report.problems)
    report.rule_tenants = check_rules(location, pages, broken, report.problems)
    check_action_terms(location, pages, report.problems)
    return report


def require_valid_knowledge(environ: Mapping[str, str] = os.environ) -> KnowledgeLocation:
    """The configured knowledge location, refused in one line when ``SUPPORT_KNOWLEDGE_DIR`` names a
    directory with any problem (the packaged knowledge is checked by the test suite instead).
    Raises :class:`ConfigurationError`."""
    location = knowledge_location(environ)
    if location.packaged:
        return location
    report = check_knowledge(location.root)
    if report.problems:
        count = len(report.problems)
        raise ConfigurationError(
            KnowledgeErrorCode.INVALID_KNOWLEDGE,
            f"{KNOWLEDGE_DIR_ENV}={location.root}: {count} problem{'s' if count > 1 else ''}, the first "
            f"{report.problems[0]} (starter.py knowledge check {location.root} lists them all)",
        )
    return location


def _check_document(path: Path, problems: list[Problem]) -> dict[str, PageInfo]:
    """Check one document; return its pages (by page id) when its header is valid."""
    start = len(problems)
    text = _read_text(path, problems)
    if text is None:
        return {}
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        problems.append(Problem(path, 1, "the file must start with a '---' front-matter"))
        return {}
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        problems.append(Problem(path, 1, "the front-matter is not closed with '---'"))
        return {}
    header = _check_header(path, lines[1:end], problems)
    page_lines = _check_pages(path, lines, end + 1, problems)
    if header is None:
        return {}
    if len(problems) == start:
        try:
            parse_document(text, source=path.name)
        except ContractError as exc:
            problems.append(Problem(path, 1, exc.message))
    return {f"{header.id}:{page_no}": PageInfo(header, path, line) for page_no, line in page_lines.items()}


def _read_text(path: Path, problems: list[Problem]) -> str | None:
    """The text of a document or skill, or None after one problem: unreadable, not UTF-8, or holding a
    NUL byte (reported on the line of the first one)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(path, 1, f"cannot be read as UTF-8 text: {type(exc).__name__}"))
        return None
    nul = text.find("\x00")
    if nul >= 0:
        line = len((text[:nul] + "x").splitlines())
        problems.append(Problem(path, line, "holds a NUL byte (U+0000); a knowledge file is plain text"))
        return None
    return text


def _check_header(path: Path, header_lines: list[str], problems: list[Problem]) -> DocumentHeader | None:
    """Header lines start at file line 2; a field's problem is reported on the field's line."""
    try:
        raw = yaml.safe_load("\n".join(header_lines))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.append(Problem(path, (mark.line + 2) if mark else 1, f"the front-matter is not YAML: {exc}"))
        return None
    if not isinstance(raw, dict):
        problems.append(Problem(path, 1, "the front-matter must be 'field: value' lines"))
        return None

    def line_of(name: str) -> int:
        return field_line(header_lines, rf"^{re.escape(name)}\s*:", offset=2)

    try:
        header = DocumentHeader.model_validate(raw)
    except ValidationError as exc:
        problems.extend(validation_problems(path, exc, line_of, what="header"))
        return None
    checks = (
        ("id", header.id == path.stem, f"header id {header.id!r} does not match the file name {path.name!r}"),
        ("id", bool(DOCUMENT_ID.match(header.id)), f"id {header.id!r} is not well-formed (A-Z, 0-9, _)"),
        ("version", bool(VERSION.match(header.version)), f"version {header.version!r} is not well-formed"),
        ("tenant", bool(re.match(NAME_PATTERN, header.tenant)), f"tenant {header.tenant!r} is not a tenant name"),
        (
            "effective_to",
            header.effective_to is None or header.effective_to > header.effective_from,
            f"effective_to {header.effective_to} is not after effective_from {header.effective_from}",
        ),
    )
    failed = [Problem(path, line_of(name), message) for name, ok, message in checks if not ok]
    problems.extend(failed)
    return header if not failed else None


def _check_pages(path: Path, lines: list[str], first: int, problems: list[Problem]) -> dict[str, int]:
    """Check the pages after the front-matter (``lines[first:]``); return page number -> heading line."""
    pages: dict[str, int] = {}
    current: _Page | None = None
    for index in range(first, len(lines)):
        line, number = lines[index], index + 1
        if line.startswith("# "):
            if current is not None:
                current.finish(problems)
            current = _page_heading(path, line, number, pages, problems)
        elif current is not None:
            current.add(line, number, problems)
        elif line.strip():
            problems.append(Problem(path, number, "text before the first page heading '# p01 | English | 中文'"))
    if current is not None:
        current.finish(problems)
    if not pages and not any(p.file == path for p in problems):
        problems.append(Problem(path, first + 1, "the document has no pages"))
    return pages


def _page_heading(path: Path, line: str, number: int, pages: dict[str, int], problems: list[Problem]) -> _Page:
    match = _PAGE_HEADING.match(line)
    if match is None:
        problems.append(Problem(path, number, f"unknown heading {line!r}; a page heading is '# pNN | English | 中文'"))
        return _Page(path, "?", number)
    page_no = match.group(1)
    expected = f"p{len(pages) + 1:02d}"
    if not PAGE_NUMBER.match(page_no):
        problems.append(Problem(path, number, f"page id {page_no!r} is not well-formed; use p01, p02, ..."))
    elif page_no in pages:
        problems.append(Problem(path, number, f"page {page_no} appears twice (first at line {pages[page_no]})"))
    elif page_no != expected:
        problems.append(Problem(path, number, f"page {page_no} is out of order; expected {expected}"))
    else:
        pages[page_no] = number
    return _Page(path, page_no, number)


@dataclass
class _Page:
    """One page being scanned: its ``## en`` and ``## zh`` sections and their paragraphs."""

    path: Path
    page_no: str
    line: int
    sections: dict[str, list[tuple[int, str]]] = field(default_factory=dict)

    def add(self, line: str, number: int, problems: list[Problem]) -> None:
        if line.startswith("#"):
            expected = _LANGUAGES[len(self.sections)] if len(self.sections) < len(_LANGUAGES) else None
            if expected is None or line.strip() != f"## {expected}":
                problems.append(
                    Problem(
                        self.path, number, f"unknown or misplaced heading {line!r}; a page has '## en' then '## zh'"
                    )
                )
                return
            self.sections[expected] = []
        elif self.sections:
            self.sections[list(self.sections)[-1]].append((number, line))
        elif line.strip():
            problems.append(Problem(self.path, number, f"page {self.page_no}: text before '## en'"))

    def finish(self, problems: list[Problem]) -> None:
        for language in _LANGUAGES:
            paragraphs = _paragraphs(self.sections.get(language, []))
            if not paragraphs:
                problems.append(
                    Problem(
                        self.path, self.line, f"page {self.page_no}: the '## {language}' section is missing or empty"
                    )
                )
            for number, text in paragraphs:
                if len(text) > MAX_PARAGRAPH_CHARS:
                    problems.append(
                        Problem(
                            self.path,
                            number,
                            f"page {self.page_no} {language}: a paragraph of {len(text)} characters, over the "
                            f"{MAX_PARAGRAPH_CHARS}-character limit",
                        )
                    )


def _paragraphs(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Paragraphs as (first line number, text), split at blank lines as the loader splits them."""
    paragraphs: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    for number, line in [*lines, (0, "")]:
        if line.strip():
            start = start if current else number
            current.append(line.strip())
        elif current:
            paragraphs.append((start, "\n".join(current)))
            current = []
    return paragraphs


def _check_skill(path: Path, pages: Mapping[str, PageInfo], broken: set[str], problems: list[Problem]) -> None:
    """The skill parses, is named for its folder, and every page id it mentions exists (a page of a
    document already refused is not reported again)."""
    text = _read_text(path, problems)
    if text is None:
        return
    lines = text.replace("\r\n", "\n").split("\n")
    try:
        skill = parse_skill(text, source=f"{path.parent.name}/SKILL.md")
    except ContractError as exc:
        problems.append(Problem(path, 1, exc.message))
        return
    if skill.summary.name != path.parent.name:
        name_line = field_line(lines, r"^name\s*:", offset=1)
        problems.append(
            Problem(path, name_line, f"name {skill.summary.name!r} does not match the folder {path.parent.name!r}")
        )
    for number, text_line in enumerate(lines, start=1):
        for reference in PAGE_REFERENCE.findall(text_line):
            if reference not in pages and reference.split(":")[0] not in broken:
                problems.append(Problem(path, number, f"cites page {reference}, which no document has"))
