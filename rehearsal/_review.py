"""The rehearsal model's review: citations, the pages a proposal must cite, unsupported "refund paid" claims.

The verdict is ``insufficient`` when the answer claims a payment no receipt backs or proposes a
refund without an eligible quote, ``revise`` for citations outside the evidence, a proposal that
misses a page of its quote, or an answer that cites nothing, and ``pass`` otherwise.
"""

from __future__ import annotations

import re
from typing import Any

_PAID_CLAIM = re.compile(
    r"(?:refund|money) (?:has been|was|is) (?:paid|issued|sent|completed|processed|made)"
    r"|(?:we|i) (?:have )?(?:refunded|paid) you|you (?:have been|were) refunded|has been refunded to you"
    r"|已为您退款|已退款|已经退款|退款已(?:完成|到账|支付|发放)",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|no|nothing|never|yet)\b|未|没有|尚未|不", re.IGNORECASE)


def review(context: dict[str, Any]) -> dict[str, Any]:
    candidate = context["candidate"]
    evidence_ids = {p["passage_id"] for p in context.get("evidence") or []}
    citations: list[str] = candidate.get("citations") or []
    action = candidate.get("next_action")
    quote = context.get("quote")

    if not context.get("receipt_exists") and _claims_payment(candidate.get("answer", "")):
        return _verdict("insufficient", "The answer says a refund was paid, but no receipt exists.")
    unknown = [c for c in citations if c not in evidence_ids]
    if unknown:
        return _verdict("revise", f"Citations not in the evidence: {', '.join(unknown)}.")
    if action == "propose_refund":
        if not quote or not quote.get("eligible"):
            return _verdict("insufficient", "A refund is proposed without an eligible quote.")
        cited_pages = {c.rsplit(":", 2)[0] for c in citations}
        missing = [page for page in quote.get("citations", []) if page not in cited_pages]
        if missing:
            return _verdict("revise", f"The proposal does not cite the policy page(s) {', '.join(missing)}.")
    if action == "answer" and not citations and evidence_ids:
        return _verdict("revise", "The answer cites none of the evidence.")
    return _verdict("pass", None)


def _claims_payment(answer: str) -> bool:
    sentences = re.split(r"(?<=[.!?。！？；;])\s*", answer)
    return any(_PAID_CLAIM.search(s) and not _NEGATION.search(s) for s in sentences)


def _verdict(verdict: str, problem: str | None) -> dict[str, Any]:
    return {"verdict": verdict, "problems": [problem] if problem else []}
