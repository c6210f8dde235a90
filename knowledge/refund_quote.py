"""The executable refund rule: a pure function of order facts, the rule file and an as-of date.

The quote never trusts anything a customer or a model says: it reads the order as the commerce
server reports it, the rule of the tenant whose policies the order follows (``refund_rules.json``
or ``refund_rules/<tenant>.json`` in the configured knowledge, :mod:`knowledge.location`) and the
versions of the two mandatory policy pages, resolved by id in the caller's knowledge base
(:func:`policy_page_versions`) and passed in.
If a page's version differs from the version the rule was written against, or the page does not
apply on the as-of date, there is no automatic proposal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.commerce import FIXTURE_AS_OF, Order, OrderStatus, RefundQuote, canonical_digest
from contracts.errors import ConfigurationError, SupportError
from contracts.knowledge import KnowledgeErrorCode
from knowledge.location import PACKAGED, KnowledgeLocation, knowledge_location
from knowledge.store import KnowledgeBase

RULES_PATH = PACKAGED.rules_file

ELIGIBLE = "eligible"
POLICY_VERSION_MISMATCH = "policy_version_mismatch"
REASONS = (
    "merchant_requires_manual_review",
    "not_delivered",
    "excluded_category",
    "outside_window",
    "return_not_received",
    "already_refunded",
)
"""The refusal reasons a rule's ``reason_order`` may rank (each checked by :func:`_first_failing_reason`)."""


class RefundRules(BaseModel):
    """One tenant's refund rule (``refund_rules.json`` or ``refund_rules/<tenant>.json``), validated."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    rule_version: str
    tenant: str
    policy_document: str
    policy_version: str
    window_days: int
    excluded_categories: list[str]
    require_return_received: bool
    refund_freight: bool
    window_page: str
    amount_page: str
    proposal_ttl_minutes: int
    reason_order: list[str]
    manual_review_tenants: list[str]


@dataclass(frozen=True)
class RefundRuleSet:
    """Every tenant's refund rule, and the default one a tenant without a rule is quoted against (always
    ``merchant_requires_manual_review``, under the default rule's version, exactly as before rules were
    per tenant)."""

    rules: Mapping[str, RefundRules]
    default: RefundRules

    def for_tenant(self, tenant: str | None) -> RefundRules:
        return self.rules.get(tenant, self.default) if tenant else self.default


def parse_refund_rules(text: str, *, source: str) -> RefundRules:
    """One rule file's text, validated. The engine refunds item balances only: a rule that would refund
    freight automatically is refused rather than silently ignored."""
    try:
        rules = RefundRules.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise ConfigurationError(
            KnowledgeErrorCode.INVALID_RULE, f"{source}: {' '.join(str(exc).split())[:300]}"
        ) from exc
    if rules.refund_freight:
        raise ConfigurationError(
            KnowledgeErrorCode.UNSUPPORTED_RULE, f"{source}: automatic freight refunds are not supported."
        )
    if sorted(rules.reason_order) != sorted(REASONS):
        raise ConfigurationError(
            KnowledgeErrorCode.INVALID_RULE,
            f"{source}: reason_order must list each of {', '.join(REASONS)} exactly once.",
        )
    return rules


def rule_files(location: KnowledgeLocation) -> list[Path]:
    """The rule files of ``location``: ``refund_rules.json`` first (when present), then
    ``refund_rules/<tenant>.json`` by name."""
    root = [location.rules_file] if location.rules_file.is_file() else []
    return root + sorted(location.rules_dir.glob("*.json"))


@lru_cache(maxsize=4)
def load_rule_set(location: KnowledgeLocation) -> RefundRuleSet:
    """Every rule file of ``location``, validated; a tenant's file must be named for its tenant, and
    no tenant may have two rules. The default is ``refund_rules.json``, else the first tenant's file."""
    rules: dict[str, RefundRules] = {}
    for path in rule_files(location):
        name = path.relative_to(location.root).as_posix()
        rule = parse_refund_rules(path.read_text(encoding="utf-8"), source=name)
        if path.parent == location.rules_dir and rule.tenant != path.stem:
            raise ConfigurationError(
                KnowledgeErrorCode.INVALID_RULE, f"{name}: the rule is for tenant {rule.tenant!r}, not {path.stem!r}."
            )
        if rule.tenant in rules:
            raise ConfigurationError(
                KnowledgeErrorCode.INVALID_RULE, f"{name}: tenant {rule.tenant!r} already has a refund rule."
            )
        rules[rule.tenant] = rule
    if not rules:
        raise ConfigurationError(KnowledgeErrorCode.INVALID_RULE, f"{location.describe()}: no refund rule file.")
    return RefundRuleSet(rules=rules, default=next(iter(rules.values())))


def refund_rules_for(tenant: str | None = None) -> RefundRules:
    """The configured refund rule of ``tenant`` (:func:`knowledge.location.knowledge_location`), or the
    default rule when the tenant has none or none is named."""
    return load_rule_set(knowledge_location()).for_tenant(tenant)


def load_refund_rules() -> RefundRules:
    """The configured default rule (the packaged ``refund_rules.json`` unless ``SUPPORT_KNOWLEDGE_DIR``
    names another directory)."""
    return refund_rules_for(None)


def policy_page_versions(
    knowledge: KnowledgeBase, *, as_of: date = FIXTURE_AS_OF, tenant: str | None = None
) -> dict[str, str]:
    """The version of each page the rule of ``tenant`` (default: the default rule) rests on (window,
    amount), read by id in ``knowledge`` for the rule's tenant on ``as_of``. A page that does not apply
    then is left out, so the quote refuses."""
    rules = refund_rules_for(tenant)
    versions: dict[str, str] = {}
    for page_id in (rules.window_page, rules.amount_page):
        try:
            versions[page_id] = knowledge.page_version(page_id, tenant=rules.tenant, as_of=as_of)
        except SupportError:
            continue
    return versions


def _policy_pages_match(rules: RefundRules, page_versions: Mapping[str, str]) -> bool:
    """Both the window and the amount page are present at the rule's version."""
    return all(page_versions.get(page_id) == rules.policy_version for page_id in (rules.window_page, rules.amount_page))


def _first_failing_reason(order: Order, rules: RefundRules, as_of: date, policy_tenant: str) -> str | None:
    days = (as_of - order.delivered_on).days if order.delivered_on else None
    checks = {
        "merchant_requires_manual_review": policy_tenant != rules.tenant
        or policy_tenant in rules.manual_review_tenants,
        "not_delivered": order.status is not OrderStatus.DELIVERED or order.delivered_on is None,
        "excluded_category": order.category.value in rules.excluded_categories,
        "outside_window": days is not None and days > rules.window_days,
        "return_not_received": rules.require_return_received and not order.return_received,
        "already_refunded": order.paid_items_cents - order.refunded_cents <= 0,
    }
    for reason in rules.reason_order:
        if checks[reason]:
            return reason
    return None


def _explain(reason: str, amount: int, order: Order, days: int | None, rules: RefundRules) -> tuple[str, str]:
    yuan = f"{amount / 100:.2f}"
    texts = {
        ELIGIBLE: (
            f"Delivered on {order.delivered_on} (day {days}), inside the {rules.window_days}-day window, "
            f"return received: the refundable item balance is CNY {yuan} "
            f"(paid items {order.paid_items_cents / 100:.2f} minus already refunded "
            f"{order.refunded_cents / 100:.2f}); the delivery charge of CNY {order.freight_cents / 100:.2f} "
            "is not refunded automatically.",
            f"签收后第 {days} 天，在 {rules.window_days} 天退款期内，退货已入仓：可退商品余额为 {yuan} 元"
            f"（实付商品 {order.paid_items_cents / 100:.2f} 元减已退 {order.refunded_cents / 100:.2f} 元）；"
            f"运费 {order.freight_cents / 100:.2f} 元不自动退还。",
        ),
        "merchant_requires_manual_review": (
            "This merchant has no automatic refund policy: every refund is reviewed manually by its staff.",
            "该商户没有自动退款规则：所有退款均由其工作人员人工审核。",
        ),
        "not_delivered": (
            "The order has not been delivered, so the returns window has not started.",
            "订单尚未签收，退款期尚未开始。",
        ),
        "excluded_category": (
            "Custom-made and digital items are excluded from automatic refunds.",
            "定制商品和数字商品不适用自动退款。",
        ),
        "outside_window": (
            f"Delivered {days} days ago: outside the {rules.window_days}-day window (day "
            f"{rules.window_days} is the last day inside).",
            f"已签收 {days} 天，超出 {rules.window_days} 天退款期（第 {rules.window_days} 天为最后一天）。",
        ),
        "return_not_received": (
            "The returned item has not been received at the returns warehouse yet.",
            "退货尚未到达退货仓。",
        ),
        "already_refunded": (
            "The paid item amount has already been refunded in full.",
            "实付商品金额已全部退还。",
        ),
        POLICY_VERSION_MISMATCH: (
            "The policy pages do not match the refund rule's version; a human must review this refund.",
            "政策页面版本与退款规则版本不一致，需人工审核。",
        ),
    }
    return texts[reason]


def calculate_refund_quote(
    order: Order, *, page_versions: Mapping[str, str], as_of: date = FIXTURE_AS_OF, policy_tenant: str | None = None
) -> RefundQuote:
    """Quote the automatic refund for one order at one as-of date (the fixture date by default).

    ``policy_tenant`` is the tenant whose refund rule the order's tenant follows, as the directory says
    (:meth:`contracts.directory.Directory.policy_tenant`); default the order's own tenant.

    ``page_versions`` are the policy page versions to check, resolved by the caller that owns the
    knowledge base with :func:`policy_page_versions` at the same ``as_of``: the rule reads no
    knowledge base of its own, so the one a worker or a commerce server was given is the one checked.
    """
    follows = policy_tenant or order.tenant
    rules = refund_rules_for(follows)
    reason = _first_failing_reason(order, rules, as_of, follows)
    citations: list[str] = []
    if reason != "merchant_requires_manual_review":
        citations = [rules.window_page, rules.amount_page]
        if reason is None and not _policy_pages_match(rules, page_versions):
            reason = POLICY_VERSION_MISMATCH
    eligible = reason is None
    amount = order.paid_items_cents - order.refunded_cents if eligible else 0
    reason = reason or ELIGIBLE
    days = (as_of - order.delivered_on).days if order.delivered_on else None
    explanation_en, explanation_zh = _explain(reason, amount, order, days, rules)
    identity = {
        "order_id": order.order_id,
        "order_version": order.version,
        "rule_version": rules.rule_version,
        "as_of": as_of.isoformat(),
        "reason": reason,
        "amount_cents": amount,
    }
    return RefundQuote(
        quote_id="Q-" + canonical_digest(identity)[:16],
        order_id=order.order_id,
        order_version=order.version,
        tenant=order.tenant,
        rule_version=rules.rule_version,
        as_of=as_of,
        eligible=eligible,
        reason=reason,
        amount_cents=amount,
        currency=order.currency,
        paid_items_cents=order.paid_items_cents,
        freight_cents=order.freight_cents,
        refunded_cents=order.refunded_cents,
        delivered_on=order.delivered_on,
        days_since_delivery=days,
        window_days=rules.window_days if follows == rules.tenant else None,
        citations=citations,
        explanation_en=explanation_en,
        explanation_zh=explanation_zh,
        ledger_id=order.ledger_id,
    )
