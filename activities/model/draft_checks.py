"""Code checks on a composed draft, run before any reviewer (model or person) sees it.

A weak reviewer model passes nonsense, so the claims a draft can get wrong in ways code can see are
checked here, without a model, against the request the draft was composed for. A failing draft raises
a :class:`~contracts.errors.ContractError` and is refused exactly like a draft that breaks its JSON
contract: the workflow records ``draft_refused`` with the code, asks for one rewrite, then hands the
case to a person; the refused text is never shown to the customer. Messages name what failed in a few
words and never repeat more than a short fragment of the draft.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from activities.model.codes import ModelErrorCode
from contracts.case_facts import CaseFacts, cents_fields
from contracts.commerce import ORDER_ID_IN_TEXT, RefundQuote
from contracts.errors import ContractError
from contracts.knowledge import Language, Passage

QUOTE_CONTEXT_CHARS = 16
"""Non-space characters of context, on one side of an amount or a claim, that must occur with it in a
shown passage for it to count as quoted from that passage."""
MAX_ENGLISH_CJK_RATIO = 0.5
MIN_CHINESE_CJK_RATIO = 0.2
_FRAGMENT_CHARS = 40


@dataclass(frozen=True)
class DraftContext:
    """What a draft is checked against: the compose request's records, never the model's own words."""

    language: Language
    order_id: str | None
    """The order the plan bound (None when the case is about no order)."""
    facts: Mapping[str, Any]
    """The compose request's facts, as they travel (:class:`~contracts.case_facts.CaseFacts` reads them)."""
    quote: RefundQuote | None
    evidence: tuple[Passage, ...] = ()
    """The passages the model was shown."""


def check_draft(answer: str, context: DraftContext) -> None:
    """Raise ContractError with the first failing check's code; return None when the draft passes.

    The checks run in this order: order ids, the quote's eligibility, amounts, language.
    """
    check_order_ids(answer, context.order_id)
    check_quote_eligibility(answer, context.quote, context.evidence)
    check_amounts(answer, allowed_cents(context.facts, context.quote), context.evidence)
    check_language(answer, context.language)


# --- order ids -----------------------------------------------------------------------------------

_EXAMPLE_MARKER = re.compile(r"(?:for example|for instance|e\.g\.|such as|例如|比如|譬如)[\s:：,，]*$", re.IGNORECASE)


def check_order_ids(answer: str, bound_order_id: str | None) -> None:
    """``draft_names_other_order``: the answer names an order id (``QH-1234``, as
    :data:`contracts.commerce.ORDER_ID_IN_TEXT` finds it in free text) other than the order the plan
    bound. When the plan bound no order, an id may appear only as a format example, right after "for
    example", "e.g.", "such as", "例如" or "比如"."""
    for match in ORDER_ID_IN_TEXT.finditer(answer):
        order_id = match.group(0)
        if order_id == bound_order_id:
            continue
        if bound_order_id is None and _EXAMPLE_MARKER.search(answer[max(0, match.start() - 24) : match.start()]):
            continue
        bound = f"order {bound_order_id}" if bound_order_id else "no order"
        raise ContractError(
            ModelErrorCode.DRAFT_NAMES_OTHER_ORDER,
            f"compose.answer names order {order_id}; the case is bound to {bound}.",
        )


# --- eligibility ---------------------------------------------------------------------------------

_ELIGIBLE_CLAIMS = re.compile(
    "|".join(
        (
            # English (word-bounded, so "ineligible" and "unrefundable" never match)
            r"\beligible\s+for\s+(?:an?\s+|the\s+)?(?:\w+\s+)?refunds?\b",
            r"\b(?:is|are|be|remains?|still)\s+eligible\b",
            r"\bqualif(?:y|ies|ied)\s+for\s+(?:an?\s+|the\s+)?(?:\w+\s+){0,2}refunds?\b",
            r"\brefundable\b",
            r"\b(?:will|would|can|could|shall|may)\s+(?:\w+\s+)?be\s+(?:\w+\s+)?refunded\b",
            r"\b(?:will|'ll|can|could)\s+(?:receive|get)\s+(?:an?\s+|the\s+|your\s+)?(?:\w+\s+)?refund\b",
            r"\brefund\s+(?:is|will\s+be)\s+(?:available|possible|approved)\b",
            # Chinese
            r"可以?(?:自动)?退(?:款|还|回)",
            r"(?:能够?|可以)(?:获得|得到|申请)?(?:自动)?退款",
            r"符合(?:自动)?退(?:款|货)条件",
            r"(?:将|会)(?:被)?(?:自动)?退(?:还|回|款)",
            r"可生成(?:自动)?退款",
        )
    ),
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[.;:!?。；：！？，,\n]")
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|nothing|neither|nor|without|unable)\b|n't\b|\bnon-|[不没無无未非否]",
    re.IGNORECASE,
)


def check_quote_eligibility(answer: str, quote: RefundQuote | None, evidence: Iterable[Passage] = ()) -> None:
    """``draft_contradicts_quote``: the quote says the order is not eligible, yet the answer describes
    it as refundable.

    A conservative keyword rule (see :data:`_ELIGIBLE_CLAIMS`): phrases such as "eligible for a refund",
    "qualifies for a refund", "refundable", "will/can/could be refunded", "you will receive a refund",
    "可以退款", "符合退款条件", "可退", "将退还"; a phrase preceded within its own clause by a negation
    ("not", "no", "never", "n't", "non-", "不", "没", "无", "未", "非") is not a claim, so the honest
    "does not qualify for an automatic refund" and "不符合自动退款条件" pass. Only this direction is
    checked: an eligible quote described as ineligible sends the customer to a person, not money out.
    A phrase quoted verbatim from a policy passage the model was shown ("… reduces what can still be
    refunded") is the policy's general rule, not a claim about the order: it passes, as amounts do.
    """
    if quote is None or quote.eligible:
        return
    passages: list[str] | None = None
    for match in _ELIGIBLE_CLAIMS.finditer(answer):
        clause = _CLAUSE_END.split(answer[max(0, match.start() - 60) : match.start()])[-1]
        if _NEGATION.search(clause):
            continue
        if passages is None:
            passages = _normalized(evidence)
        if _quoted(answer, match.start(), match.end(), passages):
            continue
        raise ContractError(
            ModelErrorCode.DRAFT_CONTRADICTS_QUOTE,
            f"compose.answer claims a refund ({_fragment(match.group(0))!r}) but the quote for "
            f"{quote.order_id} is not eligible ({quote.reason}).",
        )


# --- amounts -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d%％])(?!\.\d)")
_GLUED = re.compile(r"(?:[A-Za-z_]|[A-Za-z0-9]-)$")
"""What glues a number into an identifier (``SF1234``, ``QH-1001``, ``2026-09``) unless a currency is."""
_MAJOR_BEFORE = re.compile(r"(?:CNY|RMB|¥|￥|人民币|yuan)\s*-?\s*$", re.IGNORECASE)
_MAJOR_AFTER = re.compile(r"^\s*(?:元|块|yuan\b|CNY\b|RMB\b)", re.IGNORECASE)
_MINOR_AFTER = re.compile(r"^\s*(?:cents?\b|分(?![钟之]))", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Amount:
    text: str
    cents: Decimal
    start: int
    end: int


def money_amounts(answer: str) -> list[Amount]:
    """Every money amount in a text, in cents.

    A number is a money amount when a currency marker is next to it (``CNY``/``RMB``/``¥``/``人民币``
    before it; ``元``/``块``/``yuan``/``CNY`` after it: yuan) or a cents unit follows it
    (``cents``/``分``, not ``分钟``: cents), or when it has exactly two decimals (yuan). Dates, day
    counts ("day 7", "30-day window", "30 天"), order ids and version numbers are not amounts.
    """
    amounts = []
    for match in _NUMBER.finditer(answer):
        whole, decimals = match.group(1).replace(",", ""), match.group(2)
        before, after = answer[max(0, match.start() - 8) : match.start()], answer[match.end() : match.end() + 8]
        if _GLUED.search(before) and not _MAJOR_BEFORE.search(before):
            continue
        try:
            number = Decimal(f"{whole}.{decimals}" if decimals else whole)
        except InvalidOperation:  # pragma: no cover - the pattern admits only digits
            continue
        if _MINOR_AFTER.match(after):
            cents = number
        elif _MAJOR_BEFORE.search(before) or _MAJOR_AFTER.match(after) or (decimals and len(decimals) == 2):
            cents = number * 100
        else:
            continue
        amounts.append(Amount(match.group(0), cents, match.start(), match.end()))
    return amounts


def allowed_cents(facts: Mapping[str, Any], quote: RefundQuote | None) -> frozenset[Decimal]:
    """Every cents value of the facts' records and of the quote (their fields named ``*_cents``)."""
    values = set(CaseFacts(facts).recorded_cents())
    if quote is not None:
        values.update(cents_fields(quote))
    return frozenset(Decimal(value) for value in values)


def check_amounts(answer: str, allowed: Iterable[Decimal], evidence: Iterable[Passage] = ()) -> None:
    """``draft_amount_not_in_records``: a money amount in the answer (see :func:`money_amounts`) equals
    no cents value of the facts (every ``*_cents`` field of the order, invoice, order summaries and
    quote the tools returned, read as their typed records) nor of the quote.

    An amount quoted verbatim from a policy passage the model was shown (the worked examples of RETURNS
    and INVOICES: "a customer paid CNY 129.00 …") is the policy's, not a claim about the order: it
    passes when it occurs verbatim (spaces aside) in such a passage together with
    :data:`QUOTE_CONTEXT_CHARS` non-space characters of its context on one side.
    """
    allowed = frozenset(allowed)
    passages: list[str] | None = None
    for amount in money_amounts(answer):
        if amount.cents in allowed:
            continue
        if passages is None:
            passages = _normalized(evidence)
        if _quoted(answer, amount.start, amount.end, passages):
            continue
        raise ContractError(
            ModelErrorCode.DRAFT_AMOUNT_NOT_IN_RECORDS,
            f"compose.answer states the amount {_fragment(amount.text)} ({amount.cents.normalize():f} cents), "
            "which is no value of the order records or the refund quote.",
        )


def _normalized(evidence: Iterable[Passage]) -> list[str]:
    return [_SPACE.sub("", passage.text) for passage in evidence]


def _quoted(answer: str, start: int, end: int, passages: list[str]) -> bool:
    """``answer[start:end]`` with QUOTE_CONTEXT_CHARS non-space characters of its context on one side
    occurs verbatim (spaces aside) in one of the (normalized) passages."""
    middle, need = _SPACE.sub("", answer[start:end]), QUOTE_CONTEXT_CHARS
    left, right = _SPACE.sub("", answer[:start])[-need:], _SPACE.sub("", answer[end:])[:need]
    windows = [w for w, side in ((left + middle, left), (middle + right, right)) if len(side) == need]
    return any(window in text for window in windows for text in passages)


# --- language ------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def cjk_ratio(text: str) -> float:
    """CJK ideographs over CJK ideographs plus Latin letters (0.0 for a text with neither)."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def check_language(answer: str, language: Language) -> None:
    """``draft_language_mismatch``, measured over letters (CJK ideographs against Latin letters): an
    English case whose answer is mostly Chinese (over half the letters CJK) and a Chinese case whose
    answer is almost without Chinese (under a fifth of the letters CJK; no CJK at all is always refused)
    are refused."""
    ratio = cjk_ratio(answer)
    if language is Language.EN and ratio > MAX_ENGLISH_CJK_RATIO:
        problem = f"{ratio:.0%} of its letters are Chinese in an English case"
    elif language is Language.ZH and ratio < MIN_CHINESE_CJK_RATIO:
        problem = f"only {ratio:.0%} of its letters are Chinese in a Chinese case"
    else:
        return
    raise ContractError(
        ModelErrorCode.DRAFT_LANGUAGE_MISMATCH, f"compose.answer is not in the case language: {problem}."
    )


def _fragment(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= _FRAGMENT_CHARS else text[: _FRAGMENT_CHARS - 1] + "…"
