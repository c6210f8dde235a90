"""Tokenizer and BM25 ranking: a small, reproducible lexical baseline (no embedding model).

English text becomes lower-cased word tokens ``[a-z0-9]+``; each run of CJK characters becomes its
adjacent-character bigrams (a one-character run yields that character). Both apply to any text, so
an order number or "30" inside a Chinese sentence is still a token.

:func:`index_terms` is what the index and the queries actually use: the tokens above, minus English
function words, with English inflections folded by :func:`stem` (plurals, -ed and -ing, a final e),
so "refunded", "refunds" and "refund" are one term, and with Chinese runs first split at particles
and pronouns (:data:`CHINESE_STOP_CHARACTERS`) so that no bigram straddles 的 or 吗.
What is scored, with which fields and expansions, is :mod:`knowledge.ranking`'s business.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

K1 = 1.5
B = 0.75

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RUNS = re.compile(rf"[a-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")

_STOPWORD_LIST = """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don hasn isn wasn doesn didn
    also get gets got getting something anything still actually really please thanks thank hello hi"""
ENGLISH_STOPWORDS = frozenset(_STOPWORD_LIST.split())
"""Common English function words (close to the usual NLTK list), and the conversational filler a
customer adds ("please", "also", "got", "something"): they match almost every passage."""


CHINESE_STOP_CHARACTERS = frozenset("的了吗呢吧啊呀嘛么我你您他她它们这那哪是在就都也很又被把让该着能")
"""Particles, pronouns, copulas and modals: a CJK run is split at them before it is cut into bigrams,
so a question's 收到的台灯 yields 收到 and 台灯, not the accidental 到的 and 的台 that match any page.
A one-character piece left by the split is dropped (现在 -> 现 would match nothing useful)."""


def tokenize(text: str) -> list[str]:
    """Word tokens and CJK bigrams, after NFKC folding (full-width ``３０`` reads as ``30``)."""
    return _tokens(text, frozenset())


def index_terms(text: str) -> list[str]:
    """The terms BM25 sees: :func:`tokenize` with CJK runs split at :data:`CHINESE_STOP_CHARACTERS`,
    minus English stopwords, English words stemmed."""
    return [stem(token) for token in _tokens(text, CHINESE_STOP_CHARACTERS) if token not in ENGLISH_STOPWORDS]


def _tokens(text: str, cjk_separators: frozenset[str]) -> list[str]:
    tokens: list[str] = []
    for run in _TOKEN_RUNS.findall(unicodedata.normalize("NFKC", text).lower()):
        if _CJK_RUN.match(run) is None:
            tokens.append(run)
            continue
        if len(run) == 1:
            tokens.append(run)
            continue
        for part in _split_at(run, cjk_separators):
            tokens.extend(part[i : i + 2] for i in range(len(part) - 1))
    return tokens


def _split_at(run: str, separators: frozenset[str]) -> list[str]:
    if not separators:
        return [run]
    return [part for part in re.split(f"[{re.escape(''.join(sorted(separators)))}]", run) if part]


@functools.lru_cache(maxsize=8192)
def stem(token: str) -> str:
    """Fold an English inflection: Harman's plural rule, then Porter's steps 1b and 5a.

    policies -> policy, parcels -> parcel, refunded -> refund, shipped/shipping -> ship,
    charged/charge -> charg; "address", numbers and CJK are left alone. Only the suffixes that
    inflect a word are touched, never derivations (delivery stays apart from deliver).
    """
    if not token.isascii() or not token.isalpha():
        return token
    word = _singular(token)
    for suffix in ("eed", "ed", "ing"):
        if word.endswith(suffix):
            word = _porter_1b(word, suffix)
            break
    return _porter_5a(word)


def _singular(token: str) -> str:
    """Harman's "S" stemmer: policies -> policy, parcels -> parcel; leaves "address" alone."""
    if len(token) > 4 and token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if len(token) > 3 and token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


def _is_consonant(word: str, i: int) -> bool:
    if word[i] in "aeiou":
        return False
    if word[i] == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem_``."""
    pattern = "".join("c" if _is_consonant(stem_, i) else "v" for i in range(len(stem_)))
    return len(re.findall("v+c+", pattern))


def _has_vowel(stem_: str) -> bool:
    return any(not _is_consonant(stem_, i) for i in range(len(stem_)))


def _ends_cvc(word: str) -> bool:
    """Consonant-vowel-consonant at the end, the last not w, x or y (hop, not hoop or box)."""
    return (
        len(word) >= 3
        and _is_consonant(word, len(word) - 3)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


def _porter_1b(word: str, suffix: str) -> str:
    base = word[: -len(suffix)]
    if suffix == "eed":
        return base + "ee" if _measure(base) > 0 else word
    if not _has_vowel(base):
        return word
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if len(base) > 1 and base[-1] == base[-2] and _is_consonant(base, len(base) - 1) and base[-1] not in "lsz":
        return base[:-1]
    if _measure(base) == 1 and _ends_cvc(base):
        return base + "e"
    return base


def _porter_5a(word: str) -> str:
    if not word.endswith("e") or len(word) < 3:
        return word
    base = word[:-1]
    m = _measure(base)
    return base if m > 1 or (m == 1 and not _ends_cvc(base)) else word


class BM25Index:
    """Okapi BM25 over a fixed pool of tokenized documents.

    The idf is the smoothed, never-negative form ``ln(1 + (N - df + 0.5) / (df + 0.5))``, so a term
    found in every document still counts a little instead of counting against a passage. Query
    terms are de-duplicated: asking "refund refund refund" is the same query as "refund".
    """

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self._frequencies = [Counter(tokens) for tokens in documents]
        self._lengths = [len(tokens) for tokens in documents]
        self._average_length = (sum(self._lengths) / len(documents)) if documents else 0.0
        self._document_frequency: Counter[str] = Counter()
        for frequencies in self._frequencies:
            self._document_frequency.update(frequencies.keys())

    def __len__(self) -> int:
        return len(self._frequencies)

    def idf(self, term: str) -> float:
        n, df = len(self._frequencies), self._document_frequency[term]
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query_tokens: Sequence[str]) -> list[float]:
        """One score per document, in pool order; zero where no query term occurs."""
        return self.weighted_scores(dict.fromkeys(query_tokens, 1.0))

    def weighted_scores(self, query: Mapping[str, float]) -> list[float]:
        """BM25 with a weight per query term (1.0 for the words asked, less for expansions)."""
        terms = {term: weight for term, weight in query.items() if weight > 0 and self._document_frequency[term]}
        idf = {term: weight * self.idf(term) for term, weight in terms.items()}
        results: list[float] = []
        for frequencies, length in zip(self._frequencies, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._average_length) if length else self.k1
            score = 0.0
            for term in terms:
                tf = frequencies[term]
                if tf:
                    score += idf[term] * tf * (self.k1 + 1) / (tf + norm)
            results.append(score)
        return results
