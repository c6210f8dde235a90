"""Tokenizer and BM25 unit checks."""

from __future__ import annotations

import math

from knowledge.bm25 import BM25Index, index_terms, tokenize


def test_english_tokens_are_lower_cased_words() -> None:
    assert tokenize("Refund QH-1001, within 30 days!") == ["refund", "qh", "1001", "within", "30", "days"]


def test_chinese_runs_become_bigrams() -> None:
    assert tokenize("退货期限") == ["退货", "货期", "期限"]
    assert tokenize("退货，期限") == ["退货", "期限"]
    assert tokenize("退") == ["退"]


def test_mixed_text_and_full_width_digits() -> None:
    assert tokenize("签收后３０天内") == ["签收", "收后", "30", "天内"]
    assert tokenize("QH-1001 退款") == ["qh", "1001", "退款"]


def test_index_terms_drop_stopwords_and_fold_plurals() -> None:
    assert index_terms("What are the policies for parcels?") == ["policy", "parcel"]
    assert index_terms("address status 退款") == ["address", "status", "退款"]


def test_idf_is_non_negative_for_a_term_in_every_document() -> None:
    index = BM25Index([["refund", "window"], ["refund"], ["refund", "lamp"]])
    assert index.idf("refund") > 0
    assert math.isclose(index.idf("refund"), math.log(1 + 0.5 / 3.5))
    assert index.idf("lamp") > index.idf("refund")
    assert all(score > 0 for score in index.scores(["refund"]))


def test_scores_reward_rare_terms_and_saturate_repetition() -> None:
    index = BM25Index([["refund"] * 10 + ["lamp"], ["refund", "window", "lamp"], ["desk", "lamp"]])
    refund = index.scores(["refund"])
    assert index.scores(["window"])[1] > refund[0] > 0
    assert refund[2] == 0
    assert refund[0] < 10 * refund[1]


def test_query_terms_are_deduplicated_and_empty_pool_is_safe() -> None:
    index = BM25Index([["refund", "window"], ["lamp"]])
    assert index.scores(["refund", "refund", "refund"]) == index.scores(["refund"])
    assert BM25Index([]).scores(["refund"]) == []
