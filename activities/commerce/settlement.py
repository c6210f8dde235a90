"""Settlement: execute an approved refund on the commerce server, as the applicant, or close a
rejected or expired proposal there so that no approval of its case is ever paid.

The approval id is the idempotency key: the commerce server stores one receipt per approval id, so
a retried activity (a lost reply, a crashed worker) returns the original receipt and never pays
twice. The server verifies the reviewer's signed approval token (passed through as it was recorded)
and re-checks the quote itself; this activity only refuses what it can see is inconsistent before
sending it.
"""

from __future__ import annotations

from pydantic import ValidationError
from temporalio import activity

from activities.commerce.commerce_sessions import CommerceGateway, answer_as
from activities.runtime.activity_metrics import count_settlement_retry
from contracts.case import CloseRequest, SettleRequest
from contracts.commerce import ProposalClosed, ProposalClosure, RefundApproval, RefundReceipt
from contracts.errors import ContractError, SupportError, WorkerErrorCode
from contracts.names import ActivityName
from contracts.tools import ToolName


class SettlementActivities:
    def __init__(self, pool: CommerceGateway) -> None:
        self.pool = pool

    @activity.defn(name=ActivityName.EXECUTE_REFUND)
    async def execute_refund(self, request: SettleRequest) -> RefundReceipt:
        info = activity.info()
        count_settlement_retry(request.applicant.tenant)
        activity.logger.info(
            "execute_refund case=%s approval=%s order=%s attempt=%d",
            request.case_id,
            request.approval_id,
            request.proposal.order_id,
            info.attempt,
        )
        try:
            receipt = await self.settle(request)
        except SupportError as error:
            activity.logger.info(
                "execute_refund case=%s approval=%s failed: %s (%s)",
                request.case_id,
                request.approval_id,
                error.code,
                error.error_class.value,
            )
            raise
        activity.logger.info(
            "execute_refund case=%s approval=%s receipt=%s",
            request.case_id,
            request.approval_id,
            receipt.receipt_id,
        )
        return receipt

    async def settle(self, request: SettleRequest) -> RefundReceipt:
        """Send the approval and return the commerce server's receipt (typed errors propagate)."""
        proposal = request.proposal
        if (proposal.applicant, proposal.tenant) != (request.applicant.subject, request.applicant.tenant):
            raise ContractError(
                WorkerErrorCode.SETTLE_REQUEST_INVALID, "The proposal does not belong to the applicant."
            )
        if proposal.digest() != request.digest:
            raise ContractError(WorkerErrorCode.SETTLE_REQUEST_INVALID, "The digest does not match the proposal.")
        try:
            approval = RefundApproval(
                approval_id=request.approval_id,
                proposal=proposal,
                digest=request.digest,
                reviewer=request.reviewer,
                approved_at=request.approved_at,
                approval_token=request.approval_token,
                co_approval_tokens=request.co_approval_tokens,
                applicant_token=request.applicant_token,
            )
        except ValidationError as exc:
            raise ContractError(WorkerErrorCode.SETTLE_REQUEST_INVALID, "The approval is malformed.") from exc
        result = await self.pool.call(
            request.applicant,
            ToolName.EXECUTE_REFUND,
            {"approval": approval.model_dump(mode="json")},
            case_id=request.case_id,
        )
        receipt = answer_as(RefundReceipt, result, "receipt")  # a retry replays it by approval id
        if receipt.approval_id != request.approval_id or receipt.digest != request.digest:
            raise ContractError(WorkerErrorCode.RECEIPT_MISMATCH, "The receipt does not belong to this approval.")
        return receipt

    @activity.defn(name=ActivityName.CLOSE_REFUND_PROPOSAL)
    async def close_refund_proposal(self, request: CloseRequest) -> ProposalClosed:
        """Close the case's rejected or expired proposal at the commerce server (idempotent there)."""
        proposal = request.proposal
        if (proposal.applicant, proposal.tenant) != (request.applicant.subject, request.applicant.tenant):
            raise ContractError(WorkerErrorCode.CLOSE_REQUEST_INVALID, "The proposal does not belong to the applicant.")
        closure = ProposalClosure(proposal=proposal, digest=request.digest, outcome=request.outcome)
        result = await self.pool.call(
            request.applicant,
            ToolName.CLOSE_REFUND_PROPOSAL,
            {"closure": closure.model_dump(mode="json")},
            case_id=request.case_id,
        )
        closed = answer_as(ProposalClosed, result, "closure answer")
        activity.logger.info("close_refund_proposal case=%s outcome=%s", request.case_id, closed.outcome.value)
        return closed
