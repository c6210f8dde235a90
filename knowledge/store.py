"""The knowledge base: versioned bilingual policy passages, scoped search and scoped reads.

Applicability comes before ranking. A passage is a candidate only when its document belongs to the
caller's tenant, is active, and is in effect on the as-of date (``effective_from <= as_of <
effective_to``), and only passages in the requested language are scored. Reads by passage or page id
apply the same rule and refuse with one indistinguishable error, so guessing an archived or foreign
id reveals nothing, not even that it exists.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from datetime import date
from pathlib import Path

from contracts.errors import AuthorizationError, ContractError, WorkerErrorCode
from contracts.knowledge import (
    DocumentHeader,
    DocumentStatus,
    KnowledgeErrorCode,
    Language,
    Passage,
    SearchHit,
    parse_language,
)
from knowledge.location import knowledge_location
from knowledge.passages import parse_document_file
from knowledge.ranking import PassageRanker

DOCUMENTS_DIR = Path(__file__).parent / "documents"
MAX_TOP_K = 4
MAX_QUERY_CHARS = 500

_NOT_ACCESSIBLE = "No accessible knowledge passage or page has this id for this tenant and date."


class KnowledgeBase:
    def __init__(self, documents: dict[str, DocumentHeader], passages: list[Passage]) -> None:
        self.documents = documents
        self.passages = passages
        self._by_id = {passage.passage_id: passage for passage in passages}
        self._by_page: dict[str, list[Passage]] = defaultdict(list)
        for passage in passages:
            self._by_page[passage.page_id].append(passage)
        self._indexes: dict[tuple[Language, frozenset[str]], PassageRanker] = {}

    @classmethod
    def load(cls, documents_dir: Path | None = None) -> KnowledgeBase:
        """Parse every ``*.md`` document in ``documents_dir`` (default: the packaged documents)."""
        directory = documents_dir or DOCUMENTS_DIR
        documents: dict[str, DocumentHeader] = {}
        passages: list[Passage] = []
        for path in sorted(directory.glob("*.md")):
            parsed = parse_document_file(path)
            doc_id = parsed.header.id
            if path.stem != doc_id:
                raise ContractError(
                    KnowledgeErrorCode.MALFORMED_DOCUMENT, f"{path.name}: header id {doc_id!r} != file name."
                )
            documents[doc_id] = parsed.header
            passages.extend(parsed.passages)
        return cls(documents, passages)

    @staticmethod
    def is_applicable(header: DocumentHeader, *, tenant: str, as_of: date) -> bool:
        return (
            header.tenant == tenant
            and header.status is DocumentStatus.ACTIVE
            and header.effective_from <= as_of
            and (header.effective_to is None or as_of < header.effective_to)
        )

    def search(
        self, query: str, *, tenant: str, language: Language, as_of: date, top_k: int = MAX_TOP_K
    ) -> list[SearchHit]:
        """Rank applicable passages in ``language``; at most ``top_k`` hits, positive scores only."""
        if type(top_k) is not int or not 1 <= top_k <= MAX_TOP_K:
            raise ContractError(
                KnowledgeErrorCode.INVALID_TOP_K, f"top_k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}."
            )
        if not isinstance(query, str) or not query.strip():
            raise ContractError(KnowledgeErrorCode.INVALID_QUERY, "The search query is empty.")
        if len(query) > MAX_QUERY_CHARS:
            raise ContractError(
                KnowledgeErrorCode.INVALID_QUERY,
                f"The search query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}.",
            )
        ranker = self._index(tenant, parse_language(language), as_of)
        return [
            SearchHit(passage=hit.passage, score=hit.score, rank=rank)
            for rank, hit in enumerate(ranker.rank(query, top_k), start=1)
        ]

    def read_passage(self, passage_id: str, *, tenant: str, as_of: date) -> Passage:
        passage = self._by_id.get(passage_id) if isinstance(passage_id, str) else None
        if passage is None or not self._passage_applicable(passage, tenant, as_of):
            raise AuthorizationError(WorkerErrorCode.PASSAGE_NOT_ACCESSIBLE, _NOT_ACCESSIBLE)
        return passage

    def read_page(self, page_id: str, *, tenant: str, language: Language, as_of: date) -> list[Passage]:
        """Every paragraph of one page in ``language``, in authored order."""
        language = parse_language(language)
        page = self._applicable_page(page_id, tenant, as_of)
        return [passage for passage in page if passage.language is language]

    def page_version(self, page_id: str, *, tenant: str, as_of: date) -> str:
        """The document version an applicable page belongs to (checked against the refund rules)."""
        return self._applicable_page(page_id, tenant, as_of)[0].doc_version

    def _applicable_page(self, page_id: str, tenant: str, as_of: date) -> list[Passage]:
        page = self._by_page.get(page_id) if isinstance(page_id, str) else None
        if not page or not self._passage_applicable(page[0], tenant, as_of):
            raise AuthorizationError(WorkerErrorCode.PASSAGE_NOT_ACCESSIBLE, _NOT_ACCESSIBLE)
        return page

    def _passage_applicable(self, passage: Passage, tenant: str, as_of: date) -> bool:
        return self.is_applicable(self.documents[passage.doc_id], tenant=tenant, as_of=as_of)

    def _index(self, tenant: str, language: Language, as_of: date) -> PassageRanker:
        """The ranker over exactly the applicable passages, built once per applicable set.

        The key is the language and the set of applicable documents (which already encodes tenant
        and date), so every as-of date inside the same effective windows shares one index. What a
        passage is indexed with (its page and document titles, its page, the descriptions of the
        configured skills that name its page) is in ``ranking``.
        """
        applicable = frozenset(
            doc_id
            for doc_id, header in self.documents.items()
            if self.is_applicable(header, tenant=tenant, as_of=as_of)
        )
        key = (language, applicable)
        ranker = self._indexes.get(key)
        if ranker is None:
            pool = [p for p in self.passages if p.doc_id in applicable and p.language is language]
            titles = {
                doc_id: header.title_zh if language is Language.ZH else header.title_en
                for doc_id, header in self.documents.items()
                if doc_id in applicable
            }
            ranker = self._indexes[key] = PassageRanker(pool, titles, language)
        return ranker


def default_knowledge_base() -> KnowledgeBase:
    """The knowledge base at :func:`knowledge.location.knowledge_location` (``SUPPORT_KNOWLEDGE_DIR``, else
    the packaged documents), parsed once per directory and process."""
    return _knowledge_base_at(knowledge_location().documents)


@functools.lru_cache(maxsize=4)
def _knowledge_base_at(documents_dir: Path) -> KnowledgeBase:
    return KnowledgeBase.load(documents_dir)
