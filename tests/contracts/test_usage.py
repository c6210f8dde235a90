"""The case's usage tally: exact cost, and ``unknown`` whenever a reply's usage or price is unknown."""

from __future__ import annotations

from decimal import Decimal

from contracts.usage import UNKNOWN_COST, CaseUsage, ModelPrice

PRICE = ModelPrice(prompt_micro_usd_per_mtok=400_000, completion_micro_usd_per_mtok=1_600_000)
"""0.40 USD per million prompt tokens, 1.60 USD per million completion tokens."""


def test_cost_is_summed_exactly_per_kind() -> None:
    usage = CaseUsage()
    usage.add("plan_case", 1200, 80, PRICE)
    usage.add("compose_answer", 3000, 400, PRICE)
    usage.add("compose_answer", 3100, 410, PRICE)
    assert usage.by_kind["compose_answer"].replies == 2
    assert (usage.prompt_tokens, usage.completion_tokens) == (7300, 890)
    # 7300 * 0.40 / 1e6 + 890 * 1.60 / 1e6 = 0.00292 + 0.001424
    assert usage.cost_usd() == Decimal("0.004344")
    assert usage.cost_label() == "0.004344 USD"


def test_an_unpriced_reply_makes_the_cost_unknown_but_keeps_its_tokens() -> None:
    usage = CaseUsage()
    usage.add("plan_case", 1000, 50, PRICE)
    usage.add("review_answer", 900, 30, None)
    assert usage.cost_usd() is None and usage.cost_label() == UNKNOWN_COST
    assert usage.by_kind["review_answer"].unpriced == 1
    assert usage.prompt_tokens == 1900


def test_a_reply_without_usage_is_never_a_zero() -> None:
    usage = CaseUsage()
    usage.add("plan_case", None, None, PRICE)
    assert usage.by_kind["plan_case"].usage_unknown == 1
    assert usage.prompt_tokens == 0 and usage.cost_label() == UNKNOWN_COST


def test_the_tally_round_trips_through_the_memo_json() -> None:
    usage = CaseUsage()
    usage.add("plan_case", 10, 2, PRICE)
    assert CaseUsage.model_validate(usage.model_dump(mode="json")) == usage
