"""Parse one knowledge document file into its header and authored passages.

A document file is YAML front-matter (a :class:`DocumentHeader`) followed by pages. A page starts
with ``# pNN | English title | 中文标题`` and holds a ``## en`` then a ``## zh`` section whose
paragraphs are separated by blank lines. A passage is exactly one authored paragraph:
``RETURNS:p02:en:0`` is document RETURNS, page p02, English, paragraph 0. Nothing is ever cut or
merged, so a citation always points at text a person wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from contracts.errors import ContractError
from contracts.knowledge import DocumentHeader, KnowledgeErrorCode, Language, Passage

MAX_PARAGRAPH_CHARS = 2500
"""A longer paragraph is an authoring error: it must be split at a meaningful boundary by a person."""

_PAGE_HEADING = re.compile(r"^# (p\d{2}) \| (.+?) \| (.+?)\s*$")
_LANGUAGE_HEADING = re.compile(r"^## (\S+)\s*$")
_LANGUAGE_ORDER = (Language.EN, Language.ZH)


@dataclass(frozen=True)
class ParsedDocument:
    header: DocumentHeader
    passages: list[Passage]


@dataclass
class _RawPage:
    page_no: str
    title_en: str
    title_zh: str
    lines: list[str]


def parse_document_file(path: Path) -> ParsedDocument:
    """Read and parse one document file; every structural problem raises :class:`ContractError`."""
    return parse_document(path.read_text(encoding="utf-8-sig"), source=path.name)


def parse_document(text: str, *, source: str) -> ParsedDocument:
    """Parse document text; ``source`` names the file in error messages."""
    header_text, body = _split_front_matter(text, source)
    header = _parse_header(header_text, source)
    passages: list[Passage] = []
    for number, page in enumerate(_split_pages(body, source), start=1):
        if page.page_no != f"p{number:02d}":
            raise ContractError(
                KnowledgeErrorCode.MALFORMED_DOCUMENT,
                f"{source}: page {page.page_no} is out of order; expected p{number:02d} (pages are "
                "numbered p01, p02, ... in order).",
            )
        titles = {Language.EN: page.title_en, Language.ZH: page.title_zh}
        for language, paragraphs in _split_languages(page.lines, source, page.page_no).items():
            passages.extend(
                _passage(header, page.page_no, language, titles[language], index, paragraph, source)
                for index, paragraph in enumerate(paragraphs)
            )
    if not passages:
        raise ContractError(KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source}: the document has no pages.")
    return ParsedDocument(header=header, passages=passages)


def _split_front_matter(text: str, source: str) -> tuple[str, list[str]]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ContractError(
            KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source}: the file must start with a '---' front-matter."
        )
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            return "\n".join(lines[1:end]), lines[end + 1 :]
    raise ContractError(KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source}: the front-matter is not closed with '---'.")


def _parse_header(header_text: str, source: str) -> DocumentHeader:
    try:
        raw = yaml.safe_load(header_text)
        return DocumentHeader.model_validate(raw)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ContractError(KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source}: invalid front-matter: {exc}") from exc


def _split_pages(body: list[str], source: str) -> list[_RawPage]:
    pages: list[_RawPage] = []
    for line in body:
        if line.startswith("# "):
            match = _PAGE_HEADING.match(line)
            if match is None:
                raise ContractError(
                    KnowledgeErrorCode.MALFORMED_DOCUMENT,
                    f"{source}: unknown heading {line!r}; a page heading is '# pNN | English | 中文'.",
                )
            page_no, title_en, title_zh = match.groups()
            pages.append(_RawPage(page_no, title_en, title_zh, []))
        elif pages:
            pages[-1].lines.append(line)
        elif line.strip():
            raise ContractError(KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source}: text before the first page heading.")
    return pages


def _split_languages(lines: list[str], source: str, page_no: str) -> dict[Language, list[str]]:
    """Split one page into its ``## en`` and ``## zh`` sections, each a list of paragraphs."""
    sections: dict[Language, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("#"):
            match = _LANGUAGE_HEADING.match(line)
            expected = _LANGUAGE_ORDER[len(sections)] if len(sections) < len(_LANGUAGE_ORDER) else None
            if match is None or expected is None or match.group(1) != expected.value:
                raise ContractError(
                    KnowledgeErrorCode.MALFORMED_DOCUMENT,
                    f"{source} {page_no}: unknown or misplaced heading {line!r}; each page has '## en' then '## zh'.",
                )
            current = sections[expected] = []
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise ContractError(KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{source} {page_no}: text before '## en'.")
    paragraphs: dict[Language, list[str]] = {}
    for language in _LANGUAGE_ORDER:
        found = _paragraphs(sections.get(language, []))
        if not found:
            raise ContractError(
                KnowledgeErrorCode.MALFORMED_DOCUMENT,
                f"{source} {page_no}: the '## {language.value}' section is missing or empty.",
            )
        paragraphs[language] = found
    return paragraphs


def _paragraphs(lines: list[str]) -> list[str]:
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    return paragraphs


def _passage(
    header: DocumentHeader,
    page_no: str,
    language: Language,
    page_title: str,
    index: int,
    text: str,
    source: str,
) -> Passage:
    if len(text) > MAX_PARAGRAPH_CHARS:
        raise ContractError(
            KnowledgeErrorCode.PASSAGE_TOO_LONG,
            f"{source} {page_no} {language.value} paragraph {index}: {len(text)} characters, over the "
            f"{MAX_PARAGRAPH_CHARS}-character limit; split it at a meaningful boundary.",
        )
    page_id = f"{header.id}:{page_no}"
    return Passage(
        passage_id=f"{page_id}:{language.value}:{index}",
        page_id=page_id,
        doc_id=header.id,
        doc_version=header.version,
        tenant=header.tenant,
        language=language,
        page_title=page_title,
        text=text,
    )
