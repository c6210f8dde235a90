"""The action contract, as a case uses it: ask the commerce server to compute an action's proposal, execute
the agreed proposal once, or close one that ended unagreed.

The idempotency key is the case's and the proposal's: a retried activity (a lost reply, a crashed
worker) sends the same body under the same key and gets the original receipt back, marked as a
replay, never a second execution. The commerce server verifies the customer's confirmation and the
reviewers' approvals itself; this activity only refuses what it can see is inconsistent before sending.
"""

from __future__ import annotations

from temporalio import activity

from activities.commerce.commerce_sessions import CommerceGateway, answer_as
from contracts.actions import ActionClosure, ActionExecution, ActionProposal, ActionReceipt
from contracts.case import ActionCloseRequest, ActionExecuteRequest, ActionPreviewRequest
from contracts.commerce import ProposalClosed
from contracts.errors import ContractError, WorkerErrorCode
from contracts.identity import Identity
from contracts.names import ActivityName
from contracts.tools import ToolName


class ActionActivities:
    def __init__(self, pool: CommerceGateway) -> None:
        self.pool = pool

    @activity.defn(name=ActivityName.PREVIEW_ACTION)
    async def preview_action(self, request: ActionPreviewRequest) -> ActionProposal:
        """The commerce server's proposal for the request (its refusal, typed, when it makes none)."""
        if request.request.case_id != request.case_id:
            raise ContractError(WorkerErrorCode.ACTION_REQUEST_INVALID, "The request names another case.")
        result = await self.pool.call(
            request.applicant,
            ToolName.PREVIEW_ACTION,
            {"request": request.request.model_dump(mode="json")},
            case_id=request.case_id,
        )
        proposal = answer_as(ActionProposal, result, "proposal")
        activity.logger.info(
            "preview_action case=%s kind=%s order=%s proposal=%s",
            request.case_id,
            proposal.kind.value,
            proposal.effect.target,
            proposal.proposal_id,
        )
        return proposal

    @activity.defn(name=ActivityName.EXECUTE_ACTION)
    async def execute_action(self, request: ActionExecuteRequest) -> ActionReceipt:
        """The signed receipt of the agreed proposal (the original one, marked a replay, on a retry)."""
        proposal = request.proposal
        _check_the_cases(proposal, request.case_id, request.applicant)
        if proposal.digest != proposal.computed_digest():
            raise ContractError(WorkerErrorCode.ACTION_REQUEST_INVALID, "The digest does not match the proposal.")
        execution = ActionExecution(
            proposal_id=proposal.proposal_id,
            digest=proposal.digest,
            idempotency_key=request.idempotency_key,
            confirmation_token=request.confirmation_token,
            approval_tokens=tuple(request.approval_tokens),
        )
        info = activity.info()
        activity.logger.info(
            "execute_action case=%s proposal=%s attempt=%d", request.case_id, proposal.proposal_id, info.attempt
        )
        result = await self.pool.call(
            request.applicant,
            ToolName.EXECUTE_ACTION,
            {"execution": execution.model_dump(mode="json")},
            case_id=request.case_id,
        )
        receipt = answer_as(ActionReceipt, result, "receipt")
        if (receipt.proposal_id, receipt.digest, receipt.case_id) != (
            proposal.proposal_id,
            proposal.digest,
            request.case_id,
        ):
            raise ContractError(WorkerErrorCode.RECEIPT_MISMATCH, "The receipt does not belong to this proposal.")
        activity.logger.info(
            "execute_action case=%s proposal=%s receipt=%s replay=%s",
            request.case_id,
            proposal.proposal_id,
            receipt.receipt_id,
            receipt.replay,
        )
        return receipt

    @activity.defn(name=ActivityName.CLOSE_ACTION_PROPOSAL)
    async def close_action_proposal(self, request: ActionCloseRequest) -> ProposalClosed:
        """Close the case's rejected, expired or withdrawn action proposal at the commerce server (idempotent
        there): nothing of the case executes afterwards, whoever presents its agreements."""
        proposal = request.proposal
        _check_the_cases(proposal, request.case_id, request.applicant)
        closure = ActionClosure(proposal_id=proposal.proposal_id, digest=proposal.digest, outcome=request.outcome)
        result = await self.pool.call(
            request.applicant,
            ToolName.CLOSE_ACTION_PROPOSAL,
            {"closure": closure.model_dump(mode="json")},
            case_id=request.case_id,
        )
        closed = answer_as(ProposalClosed, result, "closure answer")
        activity.logger.info("close_action_proposal case=%s outcome=%s", request.case_id, closed.outcome.value)
        return closed


def _check_the_cases(proposal: ActionProposal, case_id: str, applicant: Identity) -> None:
    """The proposal a request carries must be its case's, made for its applicant."""
    if (proposal.case_id, proposal.customer, proposal.tenant) != (case_id, applicant.subject, applicant.tenant):
        raise ContractError(WorkerErrorCode.ACTION_REQUEST_INVALID, "The proposal is not this case's.")
