"""Ranking policy passages: BM25 over a passage's own text, its titles and its page, plus a small term map.

Three things the documents already carry, one small piece of general vocabulary, and what the
skills say they are for:

* **Titles.** A paragraph is indexed with its page title counted :data:`TITLE_WEIGHT` times and its
  document title once, so "it is valid for 15 minutes" still belongs to "Approval and payment" of
  "Returns and refunds".
* **The page.** Citations and relevance are per page, and a paragraph often answers only with its
  neighbours ("please report it within 48 hours" is on the same page as "a parcel arrives damaged").
  Each page in the pool is also one BM25 document, and a passage's score adds :data:`PAGE_WEIGHT`
  times its page's score, so the paragraph that matches best on the page that matches best leads.
* **Inflections.** :func:`knowledge.bm25.index_terms` already folds "refunded" into "refund".
* **Term map.** :data:`TERM_GROUPS` lists, per language, words a customer uses for what the policy
  text calls something else ("package" for "parcel", "快递" for "包裹", "guarantee" for "warranty").
  A query that says one of them also asks for the policy's word at :data:`EXPANSION_WEIGHT`.
  It is general shop and support vocabulary and names no page and no question, but some entries
  were added after reading questions the ranking missed (箱子 for 外包装, "arrive" for "transit"),
  so figures on the labelled set (docs/retrieval.md) are somewhat optimistic for unseen questions.
* **Skill notes.** A skill that names a page in its procedure ("normally RETURNS:p02 for the
  window and RETURNS:p03 for the amount") lends that page its one-line description ("Use when a
  customer asks for a refund or return, or asks whether an order can still be refunded and how much
  they would get back") as extra indexed text of each of its paragraphs (:func:`skill_page_notes`).
  Today only the refund skill names pages; descriptions are English, so only English pools get notes.
* **One hit per page** (:data:`MAX_PER_PAGE`): the four results name four pages, and the caller
  reads the whole page it cites anyway.

The weights were picked from a small grid on the labelled questions (titles 1-3, page 0.25-0.75,
expansion 0.6-1.0, with skill notes); at expansion 1.0 English Recall@4 stays 0.97-0.98 and MRR
0.90-0.91 over titles and page weight, Chinese Recall@4 0.98 and MRR 0.83-0.85, so the choice is a
plateau, not a spike. Expansion 1.0 also drops a distinction (asked word vs. mapped word) that the
grid did not reward.

BM25 itself (k1 = 1.5, b = 0.75, non-negative smoothed idf) is unchanged; see ``bm25``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contracts.knowledge import Language, Passage
from knowledge.bm25 import BM25Index, index_terms, stem, tokenize
from knowledge.skills import SkillCatalogue, default_catalogue

TITLE_WEIGHT = 2
"""How many times a page title counts in each of its paragraphs (the document title counts once)."""

PAGE_WEIGHT = 0.5
"""The share of the page's own BM25 score added to each of its paragraphs."""

MAX_PER_PAGE = 1
"""At most this many paragraphs of one page in one result list."""

EXPANSION_WEIGHT = 1.0
"""The weight of a term the query did not contain but a term-map group added (asked terms weigh 1):
the customer's word and the policy's word count alike."""

PHRASE_WORD_WEIGHT = 0.5
"""The weight left to each word of a customer's phrase that the term map has translated."""

TERM_GROUPS: dict[Language, tuple[tuple[str, ...], ...]] = {
    Language.EN: (
        ("refund", "money back", "my money", "repay"),
        ("return", "send back", "take back", "bring back"),
        ("parcel", "package", "box"),
        ("carrier", "courier"),
        ("delivery charge", "shipping fee", "shipping cost", "delivery fee", "postage"),
        ("damage", "broken", "crushed", "smashed", "cracked"),
        ("fault", "defect", "faulty", "malfunction"),
        ("warranty", "guarantee"),
        ("approve", "sign off", "authorise", "authorize"),
        ("repair", "fix", "mend"),
        ("correct", "fix", "amend"),
        ("mistake", "error", "wrong", "misspelled", "typo"),
        ("lost", "missing", "disappeared"),
        ("family member", "sister", "brother", "mother", "mum", "father", "dad", "husband", "wife", "relative"),
        ("colleague", "boss", "manager", "coworker"),
        ("someone else", "friend", "another person"),
        ("language", "chinese", "english"),
        ("dispatch", "ship", "send out"),
        ("marketing", "advertising", "adverts"),
        ("assistant", "ai", "bot", "chatbot"),
        ("restart", "crash", "outage", "interrupted", "interruption"),
        ("expire", "lapse"),
        ("gift", "present"),
        ("transit", "arrive", "reach me"),
        ("coupon", "voucher", "promo code", "discount code"),
        ("reimbursement", "expense claim", "expenses"),
        ("delete", "forget", "erase"),
    ),
    Language.ZH: (
        ("退款", "退钱", "把钱退"),
        ("退货", "寄回", "退回", "退掉"),
        ("包裹", "快递", "邮包"),
        ("外包装", "箱子", "纸箱", "外箱"),
        ("承运商", "快递公司", "快递员"),
        ("运费", "邮费", "快递费", "配送费"),
        ("损坏", "坏了", "摔坏", "压坏", "破损", "压扁", "破了"),
        ("故障", "坏了", "不能用", "不工作", "毛病"),
        ("保修", "质保", "保固"),
        ("批准", "审批", "核准"),
        ("更正", "修改", "改一下", "改正"),
        ("错误", "写错", "填错", "弄错", "有误"),
        ("丢失", "丢了", "丢件", "找不到"),
        ("家人", "老公", "老婆", "丈夫", "妻子", "爸爸", "妈妈", "父母", "姐姐", "妹妹", "哥哥", "弟弟", "亲戚"),
        ("同事", "老板", "领导", "上司"),
        ("语言", "中文", "英文", "中英文"),
        ("发货", "发出", "寄出"),
        ("取消", "撤销", "不要了"),
        ("折扣", "优惠", "打折", "优惠券"),
        ("删除", "忘记", "清除"),
        ("送达", "送到", "到货"),
        ("台灯", "阅读灯"),
    ),
}
"""Per language: the policy text's word first, then what customers say for it."""


@dataclass(frozen=True)
class RankedPassage:
    passage: Passage
    score: float


class PassageRanker:
    """Scores one pool of passages (one language, one applicable set) for a query."""

    def __init__(
        self,
        passages: Sequence[Passage],
        document_titles: Mapping[str, str],
        language: Language,
        page_notes: Mapping[str, str] | None = None,
    ) -> None:
        """``page_notes`` (page id to extra text) defaults to the configured skills' notes."""
        self.passages = list(passages)
        notes = skill_page_notes(default_catalogue(), language) if page_notes is None else page_notes
        self.language = language
        page_ids = list(dict.fromkeys(p.page_id for p in self.passages))
        self._page_of = [page_ids.index(p.page_id) for p in self.passages]
        self._passages = BM25Index(
            [_passage_terms(p, document_titles[p.doc_id], notes.get(p.page_id, "")) for p in self.passages]
        )
        page_terms: list[list[str]] = [[] for _ in page_ids]
        for passage, page in zip(self.passages, self._page_of, strict=True):
            if not page_terms[page]:
                page_terms[page] = index_terms(f"{document_titles[passage.doc_id]}\n{passage.page_title}")
            page_terms[page].extend(index_terms(passage.text))
        self._pages = BM25Index(page_terms)

    def __len__(self) -> int:
        return len(self.passages)

    def rank(self, query: str, top_k: int) -> list[RankedPassage]:
        """The ``top_k`` best passages with a positive score, best first, ties by passage id."""
        terms = query_terms(query, self.language)
        passage_scores = self._passages.weighted_scores(terms)
        page_scores = self._pages.weighted_scores(terms)
        scores = [
            score + PAGE_WEIGHT * page_scores[page] for score, page in zip(passage_scores, self._page_of, strict=True)
        ]
        ranked = sorted(
            (i for i, score in enumerate(passage_scores) if score > 0),
            key=lambda i: (-scores[i], self.passages[i].passage_id),
        )
        taken: list[int] = []
        per_page: dict[int, int] = {}
        for i in ranked:
            if per_page.get(self._page_of[i], 0) < MAX_PER_PAGE:
                per_page[self._page_of[i]] = per_page.get(self._page_of[i], 0) + 1
                taken.append(i)
                if len(taken) == top_k:
                    break
        return [RankedPassage(self.passages[i], scores[i]) for i in taken]


def query_terms(query: str, language: Language) -> dict[str, float]:
    """The query's own terms at weight 1; a group's first word at :data:`EXPANSION_WEIGHT` when the
    query says it with another member of the group. The words of a matched multi-word phrase
    ("shipping fee") then weigh only :data:`PHRASE_WORD_WEIGHT`: the policy's word stands for them."""
    weights = dict.fromkeys(index_terms(query), 1.0)
    words = tuple(stem(token) for token in tokenize(query))
    folded = unicodedata.normalize("NFKC", query).lower()
    added: dict[str, float] = {}
    for canonical, *variants in _GROUPS[language]:
        matched = [variant for variant in variants if variant.found_in(words, folded)]
        if not matched:
            continue
        for term in canonical.terms:
            added.setdefault(term, EXPANSION_WEIGHT)
        for variant in matched:
            if len(variant.terms) > 1:
                for term in set(variant.terms) - set(canonical.terms):
                    weights[term] = min(weights.get(term, 1.0), PHRASE_WORD_WEIGHT)
    for term, weight in added.items():
        weights.setdefault(term, weight)
    return weights


_PAGE_REFERENCE = re.compile(r"\b[A-Z][A-Z_]*:p\d+\b")


def skill_page_notes(catalogue: SkillCatalogue, language: Language) -> dict[str, str]:
    """Per page id, the descriptions of the skills whose ``language`` body names that page
    ("normally RETURNS:p02 for the window"): the situations a skill is for, in a customer's terms,
    become extra indexed text of the pages the skill sends the assistant to. A skill has one
    description, written in English, so only English pools get notes (English words in a Chinese
    pool would only lengthen its paragraphs)."""
    if language is not Language.EN:
        return {}
    notes: dict[str, list[str]] = {}
    for summary in catalogue.list_skills():
        body = catalogue.load_skill(summary.name, language)
        for page_id in dict.fromkeys(_PAGE_REFERENCE.findall(body)):
            notes.setdefault(page_id, []).append(summary.description)
    return {page_id: "\n".join(descriptions) for page_id, descriptions in notes.items()}


def _passage_terms(passage: Passage, document_title: str, note: str) -> list[str]:
    title = "\n".join([passage.page_title] * TITLE_WEIGHT)
    return index_terms(f"{document_title}\n{title}\n{note}\n{passage.text}")


@dataclass(frozen=True)
class _Phrase:
    """One term-map entry: its text, its words as matched (stopwords kept), its index terms."""

    surface: str
    words: tuple[str, ...]
    terms: tuple[str, ...]

    @classmethod
    def of(cls, surface: str) -> _Phrase:
        return cls(surface, tuple(stem(token) for token in tokenize(surface)), tuple(index_terms(surface)))

    def found_in(self, words: tuple[str, ...], folded: str) -> bool:
        """A Chinese phrase is looked for in the text, an English one as consecutive whole words
        (so "sign off" is not found in "signed for")."""
        if not self.surface.isascii():
            return self.surface in folded
        n = len(self.words)
        if n == 0 or self.words[0] not in words:
            return False
        return any(words[i : i + n] == self.words for i in range(len(words) - n + 1))


_GROUPS: dict[Language, list[list[_Phrase]]] = {
    language: [[_Phrase.of(word) for word in group] for group in groups] for language, groups in TERM_GROUPS.items()
}
