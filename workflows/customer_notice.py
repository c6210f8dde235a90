"""What the customer is told when no model draft may be shown: fixed sentences and the receipt, by code.

A model draft reaches the customer only when the deliver gate admitted it, and only while the outcome
the gate decided still holds (an answer, a proposal waiting for a reviewer, a request for input, a
handoff). Every other end is stated here, in the case language, from the case status or from the
commerce server's receipt: a refused draft ("your refund has been paid" before any approval) is never
shown, and after settlement the amount, the receipt id and the SIMULATED label come from the receipt,
never from model text.
"""

from __future__ import annotations

from datetime import datetime

from contracts.case import CaseStatus
from contracts.commerce import RefundProposal, RefundReceipt
from contracts.knowledge import Language

_STATUS_NOTICES: dict[CaseStatus, tuple[str, str]] = {
    CaseStatus.COMPLETED: (
        "Your case is closed.",
        "您的工单已处理完毕。",
    ),
    CaseStatus.WAITING_CUSTOMER: (
        "We need more information before we can answer. Please tell us the one order this is about and what "
        "you would like us to do. Nothing has been changed on your orders.",
        "我们需要更多信息才能答复。请告诉我们所涉及的一个订单号以及您希望我们做什么。您的订单未作任何更改。",
    ),
    CaseStatus.NEEDS_INPUT: (
        "We did not hear back from you, so this conversation is closed. Nothing has been changed on your "
        "orders. Write to us again any time.",
        "由于未收到您的回复，此对话已结束。您的订单未作任何更改。欢迎随时再次联系我们。",
    ),
    CaseStatus.WITHDRAWN: (
        "You withdrew your request, so no refund has been made and nothing has been changed on your orders.",
        "您已撤回申请，因此未进行退款，您的订单未作任何更改。",
    ),
    CaseStatus.NEEDS_HUMAN: (
        "A member of our support team will review your case and reply to you. Please do not rely on any "
        "earlier automatic message about this case.",
        "我们的客服人员将审核您的工单并回复您。请勿以本工单此前的任何自动消息为准。",
    ),
    CaseStatus.REJECTED: (
        "A reviewer did not approve the proposed refund, so no refund has been made. Our support team "
        "will contact you about the next steps.",
        "审核人员未批准该退款方案，因此未进行退款。客服人员将与您联系后续事宜。",
    ),
    CaseStatus.EXPIRED: (
        "The refund proposal expired before a reviewer approved it, so no refund has been made. Please "
        "ask again if you still want a refund.",
        "退款方案在审核人员批准前已过期，因此未进行退款。如仍需退款，请重新提交申请。",
    ),
    CaseStatus.FAILED: (
        "We could not handle your question because of a technical problem on our side. Nothing has been "
        "changed on your orders; please try again later.",
        "由于我们这边的技术问题，暂时无法处理您的问题。您的订单未作任何更改，请稍后再试。",
    ),
}


def status_notice(status: CaseStatus, language: Language) -> str | None:
    """The fixed message for a case that ended in ``status``; None while it is still running."""
    notice = _STATUS_NOTICES.get(status)
    if notice is None:
        return None
    return notice[1] if language is Language.ZH else notice[0]


def waiting_notice(proposal: RefundProposal, language: Language, now: datetime) -> str:
    """The answer to any message while a proposal waits for its reviewer: stated from the proposal."""
    amount = f"{proposal.currency} {proposal.amount_cents / 100:.2f}"
    minutes = max(0, int((proposal.expires_at - now).total_seconds() // 60))
    until = proposal.expires_at.strftime("%Y-%m-%d %H:%M")
    if language is Language.ZH:
        return (
            f"订单 {proposal.order_id} 的退款方案（{amount}）正在等待审核人员批准，将于 UTC {until} 过期（约 {minutes} "
            "分钟后）。在批准之前不会付款。如您不再需要退款，请回复“撤回”。"
        )
    return (
        f"Your refund of {amount} for order {proposal.order_id} is waiting for a reviewer's approval; the proposal "
        f"expires at {until} UTC (in about {minutes} minutes). Nothing is paid before it is approved. If you no "
        'longer want it, write "withdraw".'
    )


def receipt_notice(receipt: RefundReceipt, language: Language) -> str:
    """The confirmed outcome, stated from the commerce server's receipt alone."""
    amount = f"{receipt.currency} {receipt.amount_cents / 100:.2f}"
    if language is Language.ZH:
        return (
            f"订单 {receipt.order_id} 的退款已执行：{amount}（{receipt.amount_cents} 分），回执号 "
            f"{receipt.receipt_id}。这是模拟付款（SIMULATED），所有数据均为虚构，没有真实资金流动。"
        )
    return (
        f"The refund for order {receipt.order_id} was executed: {amount} ({receipt.amount_cents} cents), "
        f"receipt {receipt.receipt_id}. This is a SIMULATED payment on fictional data; no real money moved."
    )
