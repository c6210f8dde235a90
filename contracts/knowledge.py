"""Knowledge contracts: documents, passages, search hits and skills."""

from __future__ import annotations

from datetime import date
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from contracts.errors import ContractError


class KnowledgeErrorCode(StrEnum):
    """The codes of the knowledge base's failures: a document, skill, rule or search the service cannot use."""

    INVALID_KNOWLEDGE = "invalid_knowledge"
    INVALID_LANGUAGE = "invalid_language"
    INVALID_QUERY = "invalid_query"
    INVALID_RULE = "invalid_rule"
    INVALID_TOP_K = "invalid_top_k"
    KNOWLEDGE_DIR = "knowledge_dir"
    MALFORMED_DOCUMENT = "malformed_document"
    MALFORMED_SKILL = "malformed_skill"
    PASSAGE_TOO_LONG = "passage_too_long"
    SKILL_NOT_FOUND = "skill_not_found"
    UNSUPPORTED_RULE = "unsupported_rule"


class Language(StrEnum):
    EN = "en"
    ZH = "zh"


def parse_language(value: Language | str) -> Language:
    """A supported language, or a typed contract error."""
    try:
        return Language(value)
    except ValueError as exc:
        raise ContractError(
            KnowledgeErrorCode.INVALID_LANGUAGE, f"Unsupported language {value!r}; use 'en' or 'zh'."
        ) from exc


CHINESE_SHARE = 0.3
"""A question is Chinese when Chinese characters are at least this share of its letters: ``请退款QH-1001``
is Chinese, ``Please refund QH-1001, 谢谢`` is English."""


def question_language(text: str) -> Language:
    """The language a question is written in, by code: Chinese (CJK ideographs) or English.

    Counts CJK ideographs against Latin letters; an order id's ``QH`` and a polite Chinese word in an
    English sentence do not tip it. Used when the applicant stated no language and remembered none."""
    chinese = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf")
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    if chinese and chinese >= CHINESE_SHARE * (chinese + latin):
        return Language.ZH
    return Language.EN


class DocumentStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"


class DocumentHeader(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title_en: str
    title_zh: str
    version: str
    tenant: str
    status: DocumentStatus
    effective_from: date
    effective_to: date | None = None


class Passage(BaseModel):
    """One authored paragraph of one page in one language: ``RETURNS:p02:en:0``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passage_id: str
    page_id: str
    doc_id: str
    doc_version: str
    tenant: str
    language: Language
    page_title: str
    text: str


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    passage: Passage
    score: float
    rank: int


class SkillSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
