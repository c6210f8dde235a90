"""The tenant's approval policy, checked by the commerce server with its own copy of the directory.

A refund at or above the tenant's threshold (``two_reviewers_from_cents``) is paid only when the
approvals it is shown come from two distinct reviewers of the tenant, each signed with a key the
directory lists for them now, each an approval of exactly this proposal, none the applicant's, and
none consumed before. The workflow waits for the same policy in its recorded copy; this server trusts
neither the workflow's count nor its copy: a reviewer removed or re-keyed since is refused here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlmodel import Session

from commerce_server.db import ApprovalUseRow, CoApprovalUseRow
from contracts.approval_claims import ApprovalClaims
from contracts.approval_verification import ApprovalRefused, SignedApproval, VerifiedApproval, signed_approval
from contracts.case import Decision
from contracts.commerce import RefundApproval
from contracts.directory import Directory
from contracts.errors import CommerceErrorCode, error_from_code

POLICY_NOT_MET = "approval_policy_not_met"


def co_approvals(
    approval: RefundApproval,
    primary: VerifiedApproval,
    directory: Directory,
    session: Session,
    *,
    meets: Callable[[SignedApproval], VerifiedApproval],
) -> list[ApprovalClaims]:
    """The further approvals this refund needs under the tenant's policy, verified: each signed by a
    listed reviewer's key, meeting the terms the first approval met (``meets``), an approval, by a
    reviewer distinct from every other one shown, and never consumed before. Refused with
    ``approval_invalid`` (``approval_policy_not_met: ...``) when fewer distinct reviewers approved
    than the policy needs; tokens beyond the policy's need are refused too, so nothing is consumed
    that did not count."""
    proposal = approval.proposal
    required = directory.approvals_required(proposal.tenant, proposal.amount_cents)
    if len(approval.co_approval_tokens) != required - 1:
        shown = 1 + len(approval.co_approval_tokens)
        raise error_from_code(
            CommerceErrorCode.APPROVAL_INVALID,
            f"{POLICY_NOT_MET}: tenant {proposal.tenant} needs {required} distinct reviewer(s) for "
            f"{proposal.amount_cents} cents; {shown} approval(s) were shown.",
        )
    reviewers = {primary.reviewer}
    verified: list[ApprovalClaims] = []
    for token in approval.co_approval_tokens:
        try:
            signed = signed_approval(token, directory)
        except ApprovalRefused as refused:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_SIGNATURE_INVALID, f"co-approval: {refused.code}: {refused.message}"
            ) from None
        claims = meets(signed).claims
        if claims.decision != Decision.APPROVE:
            raise error_from_code(CommerceErrorCode.APPROVAL_INVALID, "not_an_approval: A co-approval is a rejection.")
        if claims.sub in reviewers:
            raise error_from_code(
                CommerceErrorCode.APPROVAL_INVALID,
                f"{POLICY_NOT_MET}: reviewer {claims.sub} approved twice; the policy needs distinct reviewers.",
            )
        if session.get(ApprovalUseRow, claims.jti) is not None or session.get(CoApprovalUseRow, claims.jti) is not None:
            raise error_from_code(CommerceErrorCode.APPROVAL_REUSED, "A co-approval token was already consumed.")
        reviewers.add(claims.sub)
        verified.append(claims)
    return verified


def co_approval_rows(approval_id: str, claims: list[ApprovalClaims], *, at: datetime) -> list[CoApprovalUseRow]:
    """The rows that consume the co-approvals in the refund's transaction."""
    return [
        CoApprovalUseRow(jti=item.jti, approval_id=approval_id, reviewer=item.sub, created_at=at) for item in claims
    ]
