"""How the rehearsal model's compose rules read the evidence: the case context, citations, best passages.

:class:`Context` is one compose request as the rules see it (question, language, plan, facts, evidence,
quote). The rest picks what to cite: the passages of a policy document, one passage per page a
refund quote rests on, and the passage or sentences that share the most distinctive words with the
question (English words stemmed, Chinese character bigrams, common words left out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rehearsal._common import CJK


@dataclass(frozen=True)
class Context:
    """One compose request as the rules read it; ``say`` picks the case language's wording."""

    question: str
    language: str
    plan: dict[str, Any]
    facts: dict[str, Any]
    evidence: list[dict[str, Any]]
    quote: dict[str, Any] | None

    def say(self, en: str, zh: str) -> str:
        return zh if self.language == "zh" else en

    def money(self, cents: int) -> str:
        return self.say(f"CNY {cents / 100:.2f}", f"{cents / 100:.2f} 元")


_EN_STOPWORDS = frozenset(
    {
        "about",
        "after",
        "also",
        "available",
        "because",
        "been",
        "before",
        "being",
        "cannot",
        "could",
        "does",
        "doing",
        "done",
        "from",
        "have",
        "help",
        "here",
        "into",
        "just",
        "know",
        "like",
        "make",
        "many",
        "more",
        "much",
        "need",
        "please",
        "should",
        "since",
        "some",
        "still",
        "tell",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "want",
        "what",
        "when",
        "where",
        "which",
        "while",
        "whom",
        "whose",
        "will",
        "with",
        "would",
        "your",
        "yours",
    }
)
_ZH_STOP_BIGRAMS = frozenset(
    {
        "可以",
        "什么",
        "怎么",
        "有没",
        "没有",
        "这种",
        "那种",
        "能不",
        "不能",
        "是不",
        "不是",
        "请问",
        "一下",
        "我的",
        "你们",
        "的方",
        "方式",
    }
)


def join(ctx: Context, parts: list[str]) -> str:
    return ("" if ctx.language == "zh" else " ").join(part.strip() for part in parts if part.strip())


def _doc(passage: dict[str, Any]) -> str:
    return str(passage["passage_id"]).split(":", 1)[0]


def _page(passage: dict[str, Any]) -> str:
    return passage.get("page_id") or str(passage["passage_id"]).rsplit(":", 2)[0]


def top_passages(ctx: Context, doc: str | None, count: int) -> list[str]:
    return [p["passage_id"] for p in ctx.evidence if doc is None or _doc(p) == doc][:count]


def quote_citations(ctx: Context, quote: dict[str, Any]) -> list[str]:
    """One passage per page the quote rests on, preferring the case language."""
    cited = []
    for page in quote.get("citations", []):
        on_page = [p for p in ctx.evidence if _page(p) == page]
        on_page.sort(key=lambda p: not str(p["passage_id"]).endswith(f":{ctx.language}:0"))
        if on_page:
            cited.append(on_page[0]["passage_id"])
    return cited


def _content_terms(text: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _EN_STOPWORDS]
    bigrams = []
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        bigrams += [run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in _ZH_STOP_BIGRAMS]
    return [_stem(w) for w in words] + bigrams


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _overlap(question_terms: list[str], text: str) -> int:
    lowered = text.lower()
    return sum(1 for term in question_terms if term in lowered)


def covered(question: str, evidence: list[dict[str, Any]]) -> bool:
    """Whether the evidence mentions enough of the question's distinctive words to answer it at all."""
    terms = _content_terms(question)
    if not terms:
        return True
    corpus = " ".join(str(p["text"]) for p in evidence).lower()
    found = sum(1 for term in terms if term in corpus)
    has_cjk = any(CJK.match(term) for term in terms)
    return found / len(terms) >= (0.5 if has_cjk else 0.75)


def best_passage(ctx: Context, doc: str | None) -> dict[str, Any] | None:
    terms = _content_terms(ctx.question)
    pool = [p for p in ctx.evidence if doc is None or _doc(p) == doc]
    if not pool:
        return None
    best = max(pool, key=lambda p: _overlap(terms, str(p["text"])))
    return best if _overlap(terms, str(best["text"])) > 0 else None


def first_sentences(text: str, count: int) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*", text.strip()) if s.strip()]
    separator = "" if CJK.search(text) else " "
    return separator.join(sentences[:count])[:600]


def best_sentences(
    ctx: Context, doc: str, required: tuple[str, ...], extra_terms: list[str], *, count: int
) -> list[tuple[str, str]]:
    """Up to ``count`` (passage id, sentence) pairs that mention a required word, best overlap first."""
    terms = _content_terms(ctx.question) + extra_terms
    scored: list[tuple[int, int, str, str]] = []
    for passage in ctx.evidence:
        if _doc(passage) != doc:
            continue
        for sentence in re.split(r"(?<=[.!?。！？])\s*", str(passage["text"])):
            if any(word in sentence.lower() for word in required):
                score = -_overlap(terms, sentence)
                scored.append((score, len(scored), passage["passage_id"], sentence.strip()))
    return [(passage_id, sentence) for _, _, passage_id, sentence in sorted(scored)[:count]]
