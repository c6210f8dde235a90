"""The knowledge base: the real corpus, applicability before ranking, and scoped reads by id."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

import knowledge.store
from contracts.errors import AuthorizationError, ContractError
from contracts.knowledge import DocumentHeader, DocumentStatus, Language
from knowledge.location import knowledge_location
from knowledge.store import KnowledgeBase, default_knowledge_base

AS_OF = date(2026, 9, 12)
REFUND_RULES = Path(knowledge.store.__file__).with_name("refund_rules.json")

PAGE_HEADING = re.compile(r"^# (p\d\d) \|", re.MULTILINE)


def authored_pages() -> dict[str, list[str]]:
    """Each document in the knowledge base's folder (by file name, which is its id) and the page
    headings written in it, read here without the parser: what the parsed corpus must hold."""
    files = sorted(knowledge_location().documents.glob("*.md"))
    return {path.stem: PAGE_HEADING.findall(path.read_text(encoding="utf-8")) for path in files}


OLD_AND_FOREIGN_QUERIES = [
    (Language.EN, "Can I get a refund within 14 days or 45 days of delivery?"),
    (Language.EN, "14-day refund window for returns"),
    (Language.EN, "45-day refund window and manual review"),
    (Language.ZH, "14天或45天内可以退款吗？"),
    (Language.ZH, "45 天退款期 人工审核"),
    (Language.ZH, "14 天退款期限"),
]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return default_knowledge_base()


def refusal(call: Callable[..., object], *args: object, **kwargs: object) -> tuple[str, str]:
    """The (code, message) of the authorization error that ``call`` must raise."""
    with pytest.raises(AuthorizationError) as error:
        call(*args, **kwargs)
    return error.value.code, error.value.message


def test_real_corpus_shape(kb: KnowledgeBase) -> None:
    authored = authored_pages()
    assert {"RETURNS", "RETURNS_OLD", "SOUTH_TERMS"} <= set(authored)  # what the other tests here read
    assert set(kb.documents) == set(authored)
    pages = Counter(passage.page_id for passage in kb.passages)
    assert len(pages) == sum(len(headings) for headings in authored.values())
    for doc_id, headings in authored.items():
        assert headings == [f"p{n:02d}" for n in range(1, len(headings) + 1)], doc_id  # numbered from p01
        assert sorted(p for p in pages if p.startswith(f"{doc_id}:")) == [f"{doc_id}:{h}" for h in headings]
    per_language = Counter((passage.page_id, passage.language) for passage in kb.passages)
    for page in pages:
        assert per_language[(page, Language.EN)] >= 1, page
        assert per_language[(page, Language.EN)] == per_language[(page, Language.ZH)], page


def test_real_corpus_headers(kb: KnowledgeBase) -> None:
    old, south = kb.documents["RETURNS_OLD"], kb.documents["SOUTH_TERMS"]
    assert (old.status, old.version, old.effective_from, old.effective_to) == (
        DocumentStatus.ARCHIVED,
        "2026-07",
        date(2026, 7, 1),
        date(2026, 9, 1),
    )
    assert south.tenant == "south"
    active = [h for h in kb.documents.values() if h.id not in {"RETURNS_OLD", "SOUTH_TERMS"}]
    assert {(h.tenant, h.status, h.version, h.effective_from) for h in active} == {
        ("qinghe", DocumentStatus.ACTIVE, "2026-09", date(2026, 9, 1))
    }


def test_refund_rule_pages_are_readable_at_the_rule_version(kb: KnowledgeBase) -> None:
    rules = json.loads(REFUND_RULES.read_text(encoding="utf-8"))
    for page in (rules["window_page"], rules["amount_page"]):
        assert kb.page_version(page, tenant="qinghe", as_of=AS_OF) == rules["policy_version"]
        assert kb.read_page(page, tenant="qinghe", language=Language.ZH, as_of=AS_OF)


@pytest.mark.parametrize(("language", "query"), OLD_AND_FOREIGN_QUERIES)
def test_old_and_foreign_terms_never_reach_qinghe(kb: KnowledgeBase, language: Language, query: str) -> None:
    hits = kb.search(query, tenant="qinghe", language=language, as_of=AS_OF)
    assert hits
    assert not {hit.passage.doc_id for hit in hits} & {"RETURNS_OLD", "SOUTH_TERMS"}


@pytest.mark.parametrize("language", list(Language))
def test_south_sees_only_its_own_terms(kb: KnowledgeBase, language: Language) -> None:
    hits = kb.search("45-day refund 45 天退款", tenant="south", language=language, as_of=AS_OF)
    assert hits
    assert {hit.passage.doc_id for hit in hits} == {"SOUTH_TERMS"}


@pytest.mark.parametrize("tenant", ["qinghe", "south"])
def test_before_every_effective_date_nothing_applies(kb: KnowledgeBase, tenant: str) -> None:
    for language, query in OLD_AND_FOREIGN_QUERIES:
        assert kb.search(query, tenant=tenant, language=language, as_of=date(2026, 6, 1)) == []


@pytest.mark.parametrize("language", list(Language))
def test_results_only_in_the_query_language(kb: KnowledgeBase, language: Language) -> None:
    for query in ["refund window warehouse receipt", "退款期限 仓库签收", "warranty 保修 invoice 发票"]:
        hits = kb.search(query, tenant="qinghe", language=language, as_of=AS_OF)
        assert all(hit.passage.language is language for hit in hits)


def test_hits_are_ranked_positive_and_capped(kb: KnowledgeBase) -> None:
    hits = kb.search("refund", tenant="qinghe", language=Language.EN, as_of=AS_OF)
    assert [hit.rank for hit in hits] == [1, 2, 3, 4]
    assert all(hit.score > 0 for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert len(kb.search("refund", tenant="qinghe", language=Language.EN, as_of=AS_OF, top_k=1)) == 1
    assert kb.search("zzzz qqqq", tenant="qinghe", language=Language.EN, as_of=AS_OF) == []


@pytest.mark.parametrize("top_k", [0, 5, -1, True, 1.5, "2", None])
def test_top_k_outside_one_to_four_is_rejected(kb: KnowledgeBase, top_k: int) -> None:
    with pytest.raises(ContractError) as error:
        kb.search("refund", tenant="qinghe", language=Language.EN, as_of=AS_OF, top_k=top_k)
    assert error.value.code == "invalid_top_k"


@pytest.mark.parametrize("query", ["", "   ", "x" * 501])
def test_empty_or_over_long_query_is_rejected(kb: KnowledgeBase, query: str) -> None:
    with pytest.raises(ContractError):
        kb.search(query, tenant="qinghe", language=Language.EN, as_of=AS_OF)


@pytest.mark.parametrize("passage_id", ["RETURNS_OLD:p01:en:0", "SOUTH_TERMS:p01:en:0"])
def test_archived_or_foreign_id_is_refused_like_an_unknown_id(kb: KnowledgeBase, passage_id: str) -> None:
    unknown = refusal(kb.read_passage, "NOPE:p01:en:0", tenant="qinghe", as_of=AS_OF)
    assert unknown[0] == "passage_not_accessible"
    assert refusal(kb.read_passage, passage_id, tenant="qinghe", as_of=AS_OF) == unknown
    page_id = passage_id.rsplit(":", 2)[0]
    assert refusal(kb.read_page, page_id, tenant="qinghe", language=Language.EN, as_of=AS_OF) == unknown
    assert refusal(kb.page_version, page_id, tenant="qinghe", as_of=AS_OF) == unknown


def test_not_yet_effective_passage_is_refused(kb: KnowledgeBase) -> None:
    unknown = refusal(kb.read_passage, "NOPE:p01:en:0", tenant="qinghe", as_of=AS_OF)
    early = date(2026, 8, 31)
    assert refusal(kb.read_passage, "RETURNS:p02:en:0", tenant="qinghe", as_of=early) == unknown


def test_south_terms_readable_as_south(kb: KnowledgeBase) -> None:
    passage = kb.read_passage("SOUTH_TERMS:p01:en:0", tenant="south", as_of=AS_OF)
    assert passage.tenant == "south"
    page = kb.read_page("SOUTH_TERMS:p01", tenant="south", language=Language.ZH, as_of=AS_OF)
    assert [p.passage_id for p in page] == [f"SOUTH_TERMS:p01:zh:{i}" for i in range(len(page))]
    assert kb.page_version("SOUTH_TERMS:p01", tenant="south", as_of=AS_OF) == "2026-09"
    assert refusal(kb.read_passage, "RETURNS:p02:en:0", tenant="south", as_of=AS_OF)


def test_read_page_returns_the_whole_page_in_one_language(kb: KnowledgeBase) -> None:
    page = kb.read_page("RETURNS:p02", tenant="qinghe", language=Language.EN, as_of=AS_OF)
    assert [p.passage_id for p in page] == [f"RETURNS:p02:en:{i}" for i in range(len(page))]
    assert page[0] == kb.read_passage("RETURNS:p02:en:0", tenant="qinghe", as_of=AS_OF)


def header(**changes: object) -> DocumentHeader:
    base = {
        "id": "X",
        "title_en": "X",
        "title_zh": "X",
        "version": "2026-07",
        "tenant": "qinghe",
        "status": "active",
        "effective_from": date(2026, 7, 1),
        "effective_to": date(2026, 9, 1),
    }
    return DocumentHeader.model_validate(base | changes)


def test_applicability_window_is_inclusive_then_exclusive() -> None:
    applies = KnowledgeBase.is_applicable
    assert not applies(header(), tenant="qinghe", as_of=date(2026, 6, 30))
    assert applies(header(), tenant="qinghe", as_of=date(2026, 7, 1))
    assert applies(header(), tenant="qinghe", as_of=date(2026, 8, 31))
    assert not applies(header(), tenant="qinghe", as_of=date(2026, 9, 1))
    assert applies(header(effective_to=None), tenant="qinghe", as_of=date(2030, 1, 1))
    assert not applies(header(), tenant="south", as_of=date(2026, 8, 1))
    assert not applies(header(status="archived"), tenant="qinghe", as_of=date(2026, 8, 1))


def test_index_is_built_once_per_applicable_set(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = KnowledgeBase(kb.documents, kb.passages)
    built: list[int] = []
    real = knowledge.store.PassageRanker

    def counting(passages, titles, language):
        built.append(len(passages))
        return real(passages, titles, language)

    monkeypatch.setattr(knowledge.store, "PassageRanker", counting)
    for as_of in (AS_OF, AS_OF, date(2026, 10, 1)):
        fresh.search("refund", tenant="qinghe", language=Language.EN, as_of=as_of)
    fresh.search("退款", tenant="qinghe", language=Language.ZH, as_of=AS_OF)
    assert len(built) == 2


def test_over_long_paragraph_in_a_document_fails_loading(tmp_path: Path) -> None:
    (tmp_path / "LONG.md").write_text(
        "---\nid: LONG\ntitle_en: Long\ntitle_zh: 长\nversion: '1'\ntenant: qinghe\nstatus: active\n"
        "effective_from: 2026-09-01\n---\n\n# p01 | Long | 长\n\n## en\n\n" + "word " * 600 + "\n\n## zh\n\n长。\n",
        encoding="utf-8",
    )
    with pytest.raises(ContractError) as error:
        KnowledgeBase.load(tmp_path)
    assert error.value.code == "passage_too_long"
    assert "LONG.md" in error.value.message
