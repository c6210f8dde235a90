"""The chain of proof of a case, checked offline: applicant token → proposal digest → approval token →
receipt.

Pure: no server, no clock, no files. The keys come from outside the history, so a writer of the history
cannot choose the keys its own tokens are checked with; the links are listed at :func:`verify_chain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from itertools import pairwise

from case_history.trail import CaseTrail, Decoded, End, T, unverified_claims
from case_history.verify_wording import moment, printable, refusal_text, short, where_the_case_is
from contracts.approval_verification import ApprovalTerms, approval_meets, signed_approval
from contracts.case import Decision
from contracts.case_input import CaseInput
from contracts.commerce import RefundProposal
from contracts.credentials import (
    SETTLE_WINDOW,
    ApprovalClaims,
    CredentialRefused,
    key_set,
    verify_applicant_token,
    verify_receipt,
)
from contracts.directory import Directory
from contracts.identity import Identity

APPLICANT, PROPOSAL, APPROVAL, RECEIPT = "applicant token", "proposal digest", "approval token", "receipt"
LINK_NAMES = (APPLICANT, PROPOSAL, APPROVAL, RECEIPT)
SIGNED_DECISION = {Decision.APPROVE: "an approval", Decision.REJECT: "a rejection"}


class LinkState(StrEnum):
    OK = "OK"
    BROKEN = "BROKEN"
    ABSENT = "ABSENT"


@dataclass(frozen=True)
class Link:
    name: str
    state: LinkState
    detail: str


@dataclass(frozen=True)
class ChainReport:
    case_id: str
    links: tuple[Link, ...]

    @property
    def first_broken(self) -> Link | None:
        return next((link for link in self.links if link.state is LinkState.BROKEN), None)

    @property
    def absent(self) -> list[Link]:
        return [link for link in self.links if link.state is LinkState.ABSENT]

    @property
    def verified(self) -> bool:
        """Every link is present and holds."""
        return all(link.state is LinkState.OK for link in self.links)


class LinkBroken(Exception):
    """The link is forged, altered, or missing where the history says it must exist."""


class LinkAbsent(Exception):
    """The case has not got as far as this link."""


@dataclass(frozen=True)
class OtherStart:
    """A run of the case's workflow id that is not part of its chain (a client started it)."""

    run_id: str
    started_at: datetime
    applicant_token: str | None


@dataclass
class _Known:
    """What the links checked so far established (or, failing that, what the history claims)."""

    case: CaseInput | None
    applicant: Identity | None
    proposal: RefundProposal | None = None
    digest: str | None = None
    approval: ApprovalClaims | None = None


def verify_chain(
    runs: Sequence[CaseTrail], keys: Directory, *, case_id: str, other_starts: Sequence[OtherStart] = ()
) -> ChainReport:
    """Check every link of case ``case_id``'s chain in ``runs`` (its runs, first run first) with ``keys``;
    ``other_starts`` are the workflow id's runs outside the chain.

    ``runs`` are the decoded runs of one case (:class:`~case_history.trail.CaseTrail`, first run first: a
    waiting case continues as new); ``keys`` is a public key set that comes from outside the history
    (``SUPPORT_DIRECTORY`` or the state dir's directory; never the directory the ``verify_applicant`` activity
    recorded, which a writer of the history could have chosen). Each link is OK, BROKEN (forged,
    altered, or missing where the history says it must exist) or ABSENT (the case has not got that far):

    1. **applicant token**: in the start input of the case's FIRST run (a run a client started, holding
       a question, not a carried state), signed by the issuer, for this case, naming the case's
       applicant, valid when Temporal started that run, and used by no earlier run of the same workflow
       id; every later run was continued by Temporal from the one before it and carries the same case.
    2. **proposal digest**: recomputed from the proposal in the settlement request (or, for a case that
       never settled, in its last case record); it must be the digest the settlement names, for this
       case and this applicant.
    3. **approval token**: signed by the reviewer it names, for this case and this digest, by a reviewer
       of the applicant's tenant who is not the applicant, signed before the proposal expired; the one a
       settlement carries must approve and name the same reviewer.
    4. **receipt**: the ``execute_refund`` result; its signature verifies with the commerce key, its
       signed claims equal the receipt, this proposal (case, order, amount, order version, digest) and
       the approval token's id, paid within the settle window after the approval was signed.
    """
    assert runs, "a chain has at least one run"
    trail = _merged(runs)
    case = runs[0].case.value
    known = _Known(case=case, applicant=case.applicant if case else None)
    checks: list[tuple[str, Callable[[], str]]] = [
        (APPLICANT, lambda: _applicant(runs, keys, known, case_id, other_starts)),
        (PROPOSAL, lambda: _proposal(trail, known)),
        (APPROVAL, lambda: _approval(trail, keys, known)),
        (RECEIPT, lambda: _receipt(trail, keys, known)),
    ]
    return ChainReport(case_id, tuple(checked_link(name, check) for name, check in checks))


def completed_receipt(outcome: str, receipt: Decoded[T], trail: CaseTrail, *, activity: str, result: str) -> T:
    """The receipt an activity that pays or executes returned: absent unless it completed, broken unless its
    result decodes as one (``activity`` and ``result`` name the activity and its result in the sentence)."""
    if outcome != End.COMPLETED:
        raise LinkAbsent(f"the {activity} activity {outcome}: no receipt ({where_the_case_is(trail)})")
    if receipt.value is None:
        raise LinkBroken(f"the {result} result is not a receipt ({receipt.problem})")
    return receipt.value


def checked_link(name: str, check: Callable[[], str]) -> Link:
    try:
        return Link(name, LinkState.OK, check())
    except LinkBroken as broken:
        return Link(name, LinkState.BROKEN, str(broken))
    except LinkAbsent as absent:
        return Link(name, LinkState.ABSENT, str(absent))


# --- 1. applicant token --------------------------------------------------------------------------


def _applicant(
    runs: Sequence[CaseTrail], keys: Directory, known: _Known, case_id: str, other_starts: Sequence[OtherStart]
) -> str:
    first = runs[0]
    if first.continued_from:
        raise LinkBroken(
            f"the chain's first run is missing: run {printable(first.run_id)} continued from run "
            f"{printable(first.continued_from)}, which is not in the history read (export every run of the case)"
        )
    case = known.case
    if case is None:
        raise LinkBroken(f"the workflow's start input is not a case ({first.case.problem})")
    if case.case_id != case_id:
        raise LinkBroken(f"the history is of case {printable(case.case_id)}, not {case_id}")
    if case.carried is not None:
        raise LinkBroken(
            "the case's first run was started with a carried state instead of a question: no applicant was "
            "verified for it (only Temporal's continue-as-new may carry a case's state)"
        )
    _check_continuations(runs, case)
    if not case.applicant_token:
        raise LinkBroken("missing: the case was started without an applicant token (no issuer signed who asks)")
    started = first.run_started_at
    assert started is not None
    try:
        identity = verify_applicant_token(case.applicant_token, keys, case_id=case.case_id, now=started)
    except CredentialRefused as refused:
        raise LinkBroken(refusal_text(refused)) from None
    if identity != case.applicant:
        raise LinkBroken(f"the token proves {identity.subject}, but the case names {printable(case.applicant.subject)}")
    _check_not_replayed(case.applicant_token, started, other_starts)
    known.applicant = identity
    continued = f"; continued by Temporal through {len(runs) - 1} more run(s)" if len(runs) > 1 else ""
    return (
        f"{identity.subject} ({identity.tenant}, {identity.role.value}) asked case {case.case_id}: signed by the "
        f"issuer, valid when its first run started ({moment(started)}){continued}"
    )


def _check_continuations(runs: Sequence[CaseTrail], case: CaseInput) -> None:
    """Every run after the first continued, as Temporal recorded it, from the run before it, which ended
    by continuing as new, and carries the first run's case unchanged."""
    for earlier, later in pairwise(runs):
        if later.continued_from != earlier.run_id or earlier.run_end != "continued as new":
            raise LinkBroken(f"run {printable(later.run_id)} is not a continuation of run {printable(earlier.run_id)}")
        carried = later.case.value
        if carried is None or carried.model_copy(update={"carried": None}) != case:
            raise LinkBroken(f"run {printable(later.run_id)} carries another case than the first run's")


def _check_not_replayed(token: str, started: datetime, other_starts: Sequence[OtherStart]) -> None:
    """The applicant token was not used before by another run of the workflow id (a token captured from a
    history and replayed within its lifetime)."""
    token_id = (unverified_claims(token) or {}).get("jti")
    for other in other_starts:
        other_id = (unverified_claims(other.applicant_token) or {}).get("jti")
        if token_id and other_id == token_id and other.started_at < started:
            raise LinkBroken(
                f"replayed: the applicant token was issued for run {printable(other.run_id)}, which started with it "
                f"at {moment(other.started_at)}"
            )


def _merged(runs: Sequence[CaseTrail]) -> CaseTrail:
    """One trail of the whole chain for the later links: the last run's end, the last proposal shown and
    the last settlement across the runs, and every review token in order."""
    last = runs[-1]
    proposal = next((run.proposal for run in reversed(runs) if run.proposal is not None), None)
    settlement = next((run.settlement for run in reversed(runs) if run.settlement is not None), None)
    tokens = [token for run in runs for token in run.review_tokens]
    return CaseTrail(
        workflow_id=last.workflow_id,
        started_at=runs[0].run_started_at,
        case=runs[0].case,
        proposal=proposal,
        review_tokens=tokens,
        settlement=settlement,
        run_end=last.run_end,
        final_status=last.final_status,
        final_reason=last.final_reason,
        run_id=last.run_id,
        continued_from=runs[0].continued_from,
        run_started_at=runs[0].run_started_at,
    )


# --- 2. proposal digest --------------------------------------------------------------------------


def _proposal(trail: CaseTrail, known: _Known) -> str:
    settlement = trail.settlement
    if settlement is not None:
        request = settlement.request.value
        if request is None:
            raise LinkBroken(f"the settlement request is not readable ({settlement.request.problem})")
        proposal, source = request.proposal, "the settlement request"
    elif trail.proposal is not None:
        proposal, source = trail.proposal, "the last case record (not settled)"
    else:
        raise LinkAbsent(f"no refund proposal in the history ({where_the_case_is(trail)})")
    digest = proposal.digest()
    known.proposal, known.digest = proposal, digest
    if known.case is not None and proposal.case_id != known.case.case_id:
        raise LinkBroken(f"the proposal is for case {printable(proposal.case_id)}, not {known.case.case_id}")
    applicant = known.applicant
    if applicant is not None and (proposal.applicant, proposal.tenant) != (applicant.subject, applicant.tenant):
        raise LinkBroken(f"the proposal names {printable(proposal.applicant)}, not the applicant {applicant.subject}")
    if settlement is not None and settlement.request.value is not None:
        request = settlement.request.value
        if request.digest != digest:
            raise LinkBroken(f"the settlement names digest {short(request.digest)}, the proposal's is {short(digest)}")
        if request.case_id != proposal.case_id or (applicant is not None and request.applicant != applicant):
            raise LinkBroken("the settlement request is for another case or applicant than its proposal")
    return (
        f"{short(digest)} is the SHA-256 of the proposal in {source}: {proposal.amount_cents} {proposal.currency} "
        f"cents for {proposal.order_id} (order v{proposal.order_version}), expires {moment(proposal.expires_at)}"
    )


# --- 3. approval token ---------------------------------------------------------------------------


def _approval(trail: CaseTrail, keys: Directory, known: _Known) -> str:
    proposal, digest, applicant = known.proposal, known.digest, known.applicant
    if proposal is None or digest is None or applicant is None:
        raise LinkAbsent("no proposal to approve")
    request = trail.settlement.request.value if trail.settlement else None
    if request is None:
        return _decision_without_settlement(trail, keys, known)
    if not request.approval_token:
        raise LinkBroken("missing: the settlement carries no approval token (nothing a reviewer signed)")
    claims = _approved(request.approval_token, keys, proposal, digest, applicant)
    known.approval = claims
    if claims.decision != Decision.APPROVE:
        raise LinkBroken(f"{claims.sub} signed a rejection, yet the settlement pays it")
    if request.reviewer != claims.sub:
        raise LinkBroken(f"the settlement names reviewer {printable(request.reviewer)}, but {claims.sub} signed")
    co_signers = [_approved(token, keys, proposal, digest, applicant) for token in request.co_approval_tokens]
    if any(co.decision != Decision.APPROVE for co in co_signers):
        raise LinkBroken("a co-approval the settlement carries is a rejection")
    reviewers = [claims.sub, *(co.sub for co in co_signers)]
    if len(set(reviewers)) != len(reviewers):
        raise LinkBroken(f"the settlement's approvals are not by distinct reviewers ({', '.join(reviewers)})")
    also = f"; co-approved by {', '.join(co.sub for co in co_signers)}" if co_signers else ""
    return _signed(claims, proposal) + also


def _decision_without_settlement(trail: CaseTrail, keys: Directory, known: _Known) -> str:
    """A case that never settled: the first review token that is a valid decision on its proposal."""
    assert known.proposal is not None and known.digest is not None and known.applicant is not None
    for token in trail.review_tokens:
        try:
            claims = _approved(token, keys, known.proposal, known.digest, known.applicant)
        except LinkBroken:
            continue
        known.approval = claims
        return f"{_signed(claims, known.proposal)}; not settled ({where_the_case_is(trail)})"
    attempts = len(trail.review_tokens)
    tried = f"{attempts} signed review attempt(s), none valid for this proposal; " if attempts else ""
    raise LinkAbsent(f"{tried}no reviewer's decision ({where_the_case_is(trail)})")


def _approved(
    token: str, keys: Directory, proposal: RefundProposal, digest: str, applicant: Identity
) -> ApprovalClaims:
    """The claims of an approval token that holds for this proposal, as the commerce server checks it,
    at the moment it was signed (the time checks that matter offline are against the proposal)."""
    terms = ApprovalTerms(
        case_id=proposal.case_id, digest=digest, applicant=applicant, proposal_expires_at=proposal.expires_at
    )
    try:
        signed = signed_approval(token, keys)
        approval_meets(signed, terms, keys, now=signed.claims.issued_at, settle_window=SETTLE_WINDOW)
    except CredentialRefused as refused:
        raise LinkBroken(refusal_text(refused)) from None
    return signed.claims


def _signed(claims: ApprovalClaims, proposal: RefundProposal) -> str:
    margin = int((proposal.expires_at - claims.issued_at).total_seconds())
    signed = SIGNED_DECISION[Decision(claims.decision)]
    return (
        f"{claims.sub} ({claims.tenant}) signed {signed} of this case and digest at "
        f"{moment(claims.issued_at)}, {margin} s before the proposal expired; token id {claims.jti}"
    )


# --- 4. receipt ----------------------------------------------------------------------------------


def _receipt(trail: CaseTrail, keys: Directory, known: _Known) -> str:
    settlement = trail.settlement
    if settlement is None:
        raise LinkAbsent(f"no settlement in the history ({where_the_case_is(trail)})")
    receipt = completed_receipt(
        settlement.outcome, settlement.receipt, trail, activity="settlement", result="settlement"
    )
    if not receipt.signature:
        raise LinkBroken("missing: the receipt carries no commerce signature")
    try:
        claims = verify_receipt(receipt.signature, key_set(keys))
    except CredentialRefused as refused:
        raise LinkBroken(f"the signature does not verify with the commerce key: {refusal_text(refused)}") from None
    for name in ("receipt_id", "approval_id", "order_id", "amount_cents", "currency", "digest", "order_version_after"):
        shown, signed = getattr(receipt, name), getattr(claims, name)
        if shown != signed:
            raise LinkBroken(
                f"{name} is {printable(shown)} in the history but {printable(signed)} in the signed receipt"
            )
    proposal, request = known.proposal, settlement.request.value
    if known.case is not None and claims.case_id != known.case.case_id:
        raise LinkBroken(f"the commerce server signed it for case {printable(claims.case_id)}")
    if known.digest is not None and claims.digest != known.digest:
        raise LinkBroken("the commerce server signed it for another proposal digest")
    if proposal is not None:
        paid = (claims.order_id, claims.amount_cents, claims.currency, claims.order_version_before)
        if paid != (proposal.order_id, proposal.amount_cents, proposal.currency, proposal.order_version):
            raise LinkBroken("the signed order, amount or order version differs from the proposal")
    if request is not None and claims.approval_id != request.approval_id:
        raise LinkBroken("the commerce server signed it for another approval id")
    approval = known.approval
    if approval is not None:
        if claims.approval_jti != approval.jti:
            raise LinkBroken(f"it consumed approval token {printable(claims.approval_jti)}, not {approval.jti}")
        if claims.issued_at - approval.issued_at > SETTLE_WINDOW:
            raise LinkBroken("paid later than the settle window after the approval was signed")
    return (
        f"{claims.receipt_id}: {claims.amount_cents} {claims.currency} cents for {claims.order_id} (order "
        f"v{claims.order_version_before} -> v{claims.order_version_after}, refunded {claims.refunded_cents_after} "
        f"after), signed by the commerce server at {moment(claims.issued_at)} over this digest and approval token "
        f"{claims.approval_jti} (SIMULATED)"
    )


# --- wording -------------------------------------------------------------------------------------
