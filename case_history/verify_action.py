"""The chain of proof of a case's action, checked offline: applicant token → action proposal → the
customer's confirmation → reviewers' approvals → action receipt.

Pure, like :mod:`case_history.verify`, whose applicant link it shares: the keys come from outside the
history. Each link is OK, BROKEN (forged, altered, or missing where the execution needed it) or ABSENT
(the case has not got that far). What the rule did not ask for (a confirmation, reviewers) is OK and
says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from case_history.action_trail import ActionTrail
from case_history.trail import CaseTrail, unverified_claims
from case_history.verify import (
    ChainReport,
    LinkAbsent,
    LinkBroken,
    OtherStart,
    checked_link,
    completed_receipt,
    verify_chain,
)
from case_history.verify_wording import moment, printable, refusal_text, short, where_the_case_is
from contracts.action_credentials import (
    ActionReceiptClaims,
    ConfirmationClaims,
    verify_action_receipt,
    verify_confirmation,
)
from contracts.actions import ACCOUNT_TARGET, ActionEffect, ActionProposal
from contracts.approval_verification import ApprovalTerms, approval_meets, signed_approval
from contracts.case import Decision
from contracts.credentials import SETTLE_WINDOW, ApprovalClaims, CredentialRefused, key_set
from contracts.directory import Directory
from contracts.identity import Identity

ACTION_PROPOSAL, CONFIRMATION, APPROVALS, ACTION_RECEIPT = (
    "action proposal",
    "confirmation",
    "approvals",
    "action receipt",
)


@dataclass
class _Known:
    applicant: Identity | None
    case_id: str
    proposal: ActionProposal | None = None
    executed: bool = False
    confirmation: ConfirmationClaims | None = None
    approvals: list[ApprovalClaims] = field(default_factory=list)


def verify_action_chain(
    runs: Sequence[CaseTrail],
    action: ActionTrail,
    keys: Directory,
    *,
    case_id: str,
    other_starts: Sequence[OtherStart] = (),
) -> ChainReport:
    """Check every link of the action of case ``case_id`` (``runs``: its runs, first run first)."""
    applicant_link = verify_chain(runs, keys, case_id=case_id, other_starts=other_starts).links[0]
    case = runs[0].case.value
    known = _Known(applicant=case.applicant if case else None, case_id=case_id)
    trail = runs[-1]
    links = [
        applicant_link,
        checked_link(ACTION_PROPOSAL, lambda: _proposal(action, known, trail)),
        checked_link(CONFIRMATION, lambda: _confirmation(action, keys, known)),
        checked_link(APPROVALS, lambda: _approvals(action, runs, keys, known)),
        checked_link(ACTION_RECEIPT, lambda: _receipt(action, keys, known, trail)),
    ]
    return ChainReport(case_id, tuple(links))


def _proposal(action: ActionTrail, known: _Known, trail: CaseTrail) -> str:
    execution = action.execution
    request = execution.request.value if execution is not None else None
    if execution is not None and request is None:
        raise LinkBroken(f"the execution request is not readable ({execution.request.problem})")
    proposal = request.proposal if request is not None else action.proposal
    if proposal is None:
        raise LinkAbsent(f"no action proposal in the history ({where_the_case_is(trail)})")
    source = "the execution request" if request is not None else "the last case record (not executed)"
    if proposal.computed_digest() != proposal.digest:
        raise LinkBroken(f"the proposal in {source} does not hash to its digest {short(proposal.digest)}")
    if proposal.case_id != known.case_id:
        raise LinkBroken(f"the proposal is for case {printable(proposal.case_id)}, not {known.case_id}")
    applicant = known.applicant
    if applicant is not None and (proposal.customer, proposal.tenant) != (applicant.subject, applicant.tenant):
        raise LinkBroken(f"the proposal names {printable(proposal.customer)}, not the applicant {applicant.subject}")
    if request is not None and (request.case_id != known.case_id or request.applicant != applicant):
        raise LinkBroken("the execution request is for another case or applicant than its proposal")
    known.proposal, known.executed = proposal, request is not None
    effect, requires = proposal.effect, proposal.requires
    parties = ["the customer"] if requires.customer else []
    parties += [f"{requires.reviewers} reviewer(s)"] if requires.reviewers else []
    needs = " and ".join(parties)
    return (
        f"{short(proposal.digest)} is the SHA-256 of the proposal in {source}: {proposal.kind.value} of "
        f"{effect.target} ({_version_text(effect)}, "
        f"{effect.refund_cents} {effect.currency} cents back); needs {needs or 'nobody (capped rule)'}; "
        f"expires {moment(proposal.expires_at)}"
    )


def _confirmation(action: ActionTrail, keys: Directory, known: _Known) -> str:
    proposal, applicant = known.proposal, known.applicant
    if proposal is None or applicant is None:
        raise LinkAbsent("no proposal to confirm")
    if not proposal.requires.customer:
        return "the rule asks no confirmation of the customer"
    request = action.execution.request.value if action.execution is not None else None
    if request is not None:
        if not request.confirmation_token:
            raise LinkBroken("missing: the execution carries no confirmation, yet the rule asks the customer's")
        tokens = [request.confirmation_token]
    else:
        tokens = action.confirmations
    problems: list[str] = []
    for token in tokens:
        try:
            claims = _confirmed(token, keys, proposal, applicant)
        except LinkBroken as broken:
            problems.append(str(broken))
            continue
        known.confirmation = claims
        margin = int((proposal.expires_at - claims.issued_at).total_seconds())
        return (
            f"{claims.sub} ({claims.tenant}) confirmed this digest at {moment(claims.issued_at)}, signed by the "
            f"issuer, {margin} s before the proposal expired; token id {claims.jti}"
        )
    if request is not None:
        raise LinkBroken(problems[0])
    tried = f"{len(tokens)} confirmation(s) sent, none valid for this proposal; " if tokens else ""
    raise LinkAbsent(f"{tried}the customer has not confirmed")


def _confirmed(token: str, keys: Directory, proposal: ActionProposal, applicant: Identity) -> ConfirmationClaims:
    issued = (unverified_claims(token) or {}).get("iat")
    if not isinstance(issued, int):
        raise LinkBroken("the confirmation is not a signed token with an issue time")
    try:
        claims = verify_confirmation(
            token,
            keys,
            customer=applicant,
            case_id=proposal.case_id,
            digest=proposal.digest,
            now=datetime.fromtimestamp(issued, UTC),
        )
    except CredentialRefused as refused:
        raise LinkBroken(refusal_text(refused)) from None
    if claims.issued_at >= proposal.expires_at:
        raise LinkBroken("the confirmation was signed after the proposal expired")
    return claims


def _approvals(action: ActionTrail, runs: Sequence[CaseTrail], keys: Directory, known: _Known) -> str:
    proposal, applicant = known.proposal, known.applicant
    if proposal is None or applicant is None:
        raise LinkAbsent("no proposal to approve")
    required = proposal.requires.reviewers
    if required == 0:
        return "the rule asks no reviewer"
    request = action.execution.request.value if action.execution is not None else None
    tokens = list(request.approval_tokens) if request is not None else [t for run in runs for t in run.review_tokens]
    terms = ApprovalTerms(
        case_id=proposal.case_id, digest=proposal.digest, applicant=applicant, proposal_expires_at=proposal.expires_at
    )
    approvals: list[ApprovalClaims] = []
    for token in tokens:
        try:
            signed = signed_approval(token, keys)
            approval_meets(signed, terms, keys, now=signed.claims.issued_at, settle_window=SETTLE_WINDOW)
        except CredentialRefused as refused:
            if request is not None:
                raise LinkBroken(refusal_text(refused)) from None
            continue
        if signed.claims.decision == Decision.APPROVE and all(a.sub != signed.claims.sub for a in approvals):
            approvals.append(signed.claims)
    known.approvals = approvals
    if len(approvals) < required:
        if request is not None:
            raise LinkBroken(f"the execution carries {len(approvals)} reviewer approval(s); the rule asks {required}")
        raise LinkAbsent(f"{len(approvals)} of {required} reviewer approval(s)")
    who = ", ".join(f"{a.sub} at {moment(a.issued_at)} (token id {a.jti})" for a in approvals)
    return f"{len(approvals)} of {required} distinct reviewer(s) of {applicant.tenant} approved this digest: {who}"


def _receipt(action: ActionTrail, keys: Directory, known: _Known, trail: CaseTrail) -> str:
    execution = action.execution
    if execution is None:
        raise LinkAbsent(f"no execution in the history ({where_the_case_is(trail)})")
    receipt = completed_receipt(
        execution.outcome, execution.receipt, trail, activity="execute_action", result="execution"
    )
    try:
        claims = verify_action_receipt(receipt.signature, key_set(keys))
    except CredentialRefused as refused:
        raise LinkBroken(f"the signature does not verify with the commerce key: {refusal_text(refused)}") from None
    for name in ("receipt_id", "proposal_id", "case_id", "order_id", "digest", "refund_cents", "currency"):
        if getattr(receipt, name) != getattr(claims, name):
            raise LinkBroken(f"{name} in the history differs from the signed receipt")
    proposal = known.proposal
    if proposal is not None:
        effect = proposal.effect
        signed = (claims.proposal_id, claims.digest, claims.kind, claims.order_version_before)
        if signed != (proposal.proposal_id, proposal.digest, proposal.kind.value, effect.order_version):
            raise LinkBroken("the commerce server signed it for another proposal, digest, kind or order version")
        if claims.account_version_before != effect.account_version:
            raise LinkBroken("the commerce server signed it for another version of the customer's account")
    if known.confirmation is not None and claims.confirmation_jti != known.confirmation.jti:
        raise LinkBroken("it consumed another confirmation than the customer's in the execution")
    if known.approvals and set(claims.approval_jtis) != {a.jti for a in known.approvals}:
        raise LinkBroken("it consumed other approvals than the execution's")
    return (
        f"{claims.receipt_id}: {claims.kind} of {claims.order_id or ACCOUNT_TARGET}, {claims.refund_cents} "
        f"{claims.currency} cents back ({_versions_signed(claims)}), agreed by "
        f"{', '.join(claims.agreed_by) or 'the rule alone'}, signed by the commerce server at "
        f"{moment(claims.issued_at)} (SIMULATED)"
    )


def _version_text(effect: ActionEffect) -> str:
    if effect.order_id is None:
        return f"default address, account v{effect.account_version}"
    return f"order v{effect.order_version}, {effect.status_before} -> {effect.status_after}"


def _versions_signed(claims: ActionReceiptClaims) -> str:
    if claims.order_id is None:
        return f"account v{claims.account_version_before} -> v{claims.account_version_after}"
    return f"order v{claims.order_version_before} -> v{claims.order_version_after}"
