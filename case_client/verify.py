"""The chain of proof of a case, checked offline: applicant token → proposal digest → approval token →
receipt.

:func:`verify_chain` reads a decoded :class:`~case_client.trail.CaseTrail` and a public key set that
comes from outside the history (``SUPPORT_PUBLIC_KEYS`` or the state dir's keys; never the keys the
``verify_applicant`` activity recorded, which a writer of the history could have chosen). Pure: no
server, no clock, no files. Each link is OK, BROKEN (forged, altered, or missing where the history
says it must exist) or ABSENT (the case has not got that far):

1. **applicant token**: in the workflow's start input, signed by the issuer, for this case, naming
   the case's applicant, valid when the case started.
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

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from case_client.trail import CaseTrail
from contracts.case import CaseInput
from contracts.commerce import RefundProposal
from contracts.credentials import (
    SETTLE_WINDOW,
    ApprovalClaims,
    CredentialRefused,
    PublicKeys,
    check_approval,
    verify_applicant_token,
    verify_approval_token,
    verify_receipt,
)
from contracts.identity import Identity

APPLICANT, PROPOSAL, APPROVAL, RECEIPT = "applicant token", "proposal digest", "approval token", "receipt"
LINK_NAMES = (APPLICANT, PROPOSAL, APPROVAL, RECEIPT)
SIGNED_DECISION = {"approve": "an approval", "reject": "a rejection"}


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


class _Broken(Exception):
    """The link is forged, altered, or missing where the history says it must exist."""


class _Absent(Exception):
    """The case has not got as far as this link."""


@dataclass
class _Known:
    """What the links checked so far established (or, failing that, what the history claims)."""

    case: CaseInput | None
    applicant: Identity | None
    proposal: RefundProposal | None = None
    digest: str | None = None
    approval: ApprovalClaims | None = None


def verify_chain(trail: CaseTrail, keys: PublicKeys, *, case_id: str) -> ChainReport:
    """Check every link of case ``case_id``'s chain in ``trail`` with ``keys`` (see the module docstring)."""
    case = trail.case.value
    known = _Known(case=case, applicant=case.applicant if case else None)
    checks: list[tuple[str, Callable[[], str]]] = [
        (APPLICANT, lambda: _applicant(trail, keys, known, case_id)),
        (PROPOSAL, lambda: _proposal(trail, known)),
        (APPROVAL, lambda: _approval(trail, keys, known)),
        (RECEIPT, lambda: _receipt(trail, keys, known)),
    ]
    return ChainReport(case_id, tuple(_link(name, check) for name, check in checks))


def _link(name: str, check: Callable[[], str]) -> Link:
    try:
        return Link(name, LinkState.OK, check())
    except _Broken as broken:
        return Link(name, LinkState.BROKEN, str(broken))
    except _Absent as absent:
        return Link(name, LinkState.ABSENT, str(absent))


# --- 1. applicant token --------------------------------------------------------------------------


def _applicant(trail: CaseTrail, keys: PublicKeys, known: _Known, case_id: str) -> str:
    case = known.case
    if case is None:
        raise _Broken(f"the workflow's start input is not a case ({trail.case.problem})")
    if case.case_id != case_id:
        raise _Broken(f"the history is of case {_shown(case.case_id)}, not {case_id}")
    if not case.applicant_token:
        raise _Broken("missing: the case was started without an applicant token (no issuer signed who asks)")
    assert trail.started_at is not None
    try:
        identity = verify_applicant_token(case.applicant_token, keys, case_id=case.case_id, now=trail.started_at)
    except CredentialRefused as refused:
        raise _Broken(_refusal(refused)) from None
    if identity != case.applicant:
        raise _Broken(f"the token proves {identity.subject}, but the case names {_shown(case.applicant.subject)}")
    known.applicant = identity
    return (
        f"{identity.subject} ({identity.tenant}, {identity.role.value}) asked case {case.case_id}: signed by the "
        f"issuer, valid when the case started ({_at(trail.started_at)})"
    )


# --- 2. proposal digest --------------------------------------------------------------------------


def _proposal(trail: CaseTrail, known: _Known) -> str:
    settlement = trail.settlement
    if settlement is not None:
        request = settlement.request.value
        if request is None:
            raise _Broken(f"the settlement request is not readable ({settlement.request.problem})")
        proposal, source = request.proposal, "the settlement request"
    elif trail.proposal is not None:
        proposal, source = trail.proposal, "the last case record (not settled)"
    else:
        raise _Absent(f"no refund proposal in the history ({_where(trail)})")
    digest = proposal.digest()
    known.proposal, known.digest = proposal, digest
    if known.case is not None and proposal.case_id != known.case.case_id:
        raise _Broken(f"the proposal is for case {_shown(proposal.case_id)}, not {known.case.case_id}")
    applicant = known.applicant
    if applicant is not None and (proposal.applicant, proposal.tenant) != (applicant.subject, applicant.tenant):
        raise _Broken(f"the proposal names {_shown(proposal.applicant)}, not the applicant {applicant.subject}")
    if settlement is not None and settlement.request.value is not None:
        request = settlement.request.value
        if request.digest != digest:
            raise _Broken(f"the settlement names digest {_short(request.digest)}, the proposal's is {_short(digest)}")
        if request.case_id != proposal.case_id or (applicant is not None and request.applicant != applicant):
            raise _Broken("the settlement request is for another case or applicant than its proposal")
    return (
        f"{_short(digest)} is the SHA-256 of the proposal in {source}: {proposal.amount_cents} {proposal.currency} "
        f"cents for {proposal.order_id} (order v{proposal.order_version}), expires {_at(proposal.expires_at)}"
    )


# --- 3. approval token ---------------------------------------------------------------------------


def _approval(trail: CaseTrail, keys: PublicKeys, known: _Known) -> str:
    proposal, digest, applicant = known.proposal, known.digest, known.applicant
    if proposal is None or digest is None or applicant is None:
        raise _Absent("no proposal to approve")
    request = trail.settlement.request.value if trail.settlement else None
    if request is None:
        return _decision_without_settlement(trail, keys, known)
    if not request.approval_token:
        raise _Broken("missing: the settlement carries no approval token (nothing a reviewer signed)")
    claims = _approved(request.approval_token, keys, proposal, digest, applicant)
    known.approval = claims
    if claims.decision != "approve":
        raise _Broken(f"{claims.sub} signed a rejection, yet the settlement pays it")
    if request.reviewer != claims.sub:
        raise _Broken(f"the settlement names reviewer {_shown(request.reviewer)}, but {claims.sub} signed")
    return _signed(claims, proposal)


def _decision_without_settlement(trail: CaseTrail, keys: PublicKeys, known: _Known) -> str:
    """A case that never settled: the first review token that is a valid decision on its proposal."""
    assert known.proposal is not None and known.digest is not None and known.applicant is not None
    for token in trail.review_tokens:
        try:
            claims = _approved(token, keys, known.proposal, known.digest, known.applicant)
        except _Broken:
            continue
        known.approval = claims
        return f"{_signed(claims, known.proposal)}; not settled ({_where(trail)})"
    attempts = len(trail.review_tokens)
    tried = f"{attempts} signed review attempt(s), none valid for this proposal; " if attempts else ""
    raise _Absent(f"{tried}no reviewer's decision ({_where(trail)})")


def _approved(
    token: str, keys: PublicKeys, proposal: RefundProposal, digest: str, applicant: Identity
) -> ApprovalClaims:
    """The claims of an approval token that holds for this proposal, as the commerce server checks it,
    at the moment it was signed (the time checks that matter offline are against the proposal)."""
    try:
        claims = verify_approval_token(token, keys)
        check_approval(
            claims,
            case_id=proposal.case_id,
            digest=digest,
            applicant=applicant,
            proposal_expires_at=proposal.expires_at,
            now=claims.issued_at,
            settle_window=SETTLE_WINDOW,
        )
    except CredentialRefused as refused:
        raise _Broken(_refusal(refused)) from None
    return claims


def _signed(claims: ApprovalClaims, proposal: RefundProposal) -> str:
    margin = int((proposal.expires_at - claims.issued_at).total_seconds())
    return (
        f"{claims.sub} ({claims.tenant}) signed {SIGNED_DECISION[claims.decision]} of this case and digest at "
        f"{_at(claims.issued_at)}, {margin} s before the proposal expired; token id {claims.jti}"
    )


# --- 4. receipt ----------------------------------------------------------------------------------


def _receipt(trail: CaseTrail, keys: PublicKeys, known: _Known) -> str:
    settlement = trail.settlement
    if settlement is None:
        raise _Absent(f"no settlement in the history ({_where(trail)})")
    if settlement.outcome != "completed":
        raise _Absent(f"the settlement activity {settlement.outcome}: no receipt ({_where(trail)})")
    receipt = settlement.receipt.value
    if receipt is None:
        raise _Broken(f"the settlement result is not a receipt ({settlement.receipt.problem})")
    if not receipt.signature:
        raise _Broken("missing: the receipt carries no commerce signature")
    try:
        claims = verify_receipt(receipt.signature, keys)
    except CredentialRefused as refused:
        raise _Broken(f"the signature does not verify with the commerce key: {_refusal(refused)}") from None
    for name in ("receipt_id", "approval_id", "order_id", "amount_cents", "currency", "digest", "order_version_after"):
        shown, signed = getattr(receipt, name), getattr(claims, name)
        if shown != signed:
            raise _Broken(f"{name} is {_shown(shown)} in the history but {_shown(signed)} in the signed receipt")
    proposal, request = known.proposal, settlement.request.value
    if known.case is not None and claims.case_id != known.case.case_id:
        raise _Broken(f"the commerce server signed it for case {_shown(claims.case_id)}")
    if known.digest is not None and claims.digest != known.digest:
        raise _Broken("the commerce server signed it for another proposal digest")
    if proposal is not None:
        paid = (claims.order_id, claims.amount_cents, claims.currency, claims.order_version_before)
        if paid != (proposal.order_id, proposal.amount_cents, proposal.currency, proposal.order_version):
            raise _Broken("the signed order, amount or order version differs from the proposal")
    if request is not None and claims.approval_id != request.approval_id:
        raise _Broken("the commerce server signed it for another approval id")
    approval = known.approval
    if approval is not None:
        if claims.approval_jti != approval.jti:
            raise _Broken(f"it consumed approval token {_shown(claims.approval_jti)}, not {approval.jti}")
        if claims.issued_at - approval.issued_at > SETTLE_WINDOW:
            raise _Broken("paid later than the settle window after the approval was signed")
    return (
        f"{claims.receipt_id}: {claims.amount_cents} {claims.currency} cents for {claims.order_id} (order "
        f"v{claims.order_version_before} -> v{claims.order_version_after}, refunded {claims.refunded_cents_after} "
        f"after), signed by the commerce server at {_at(claims.issued_at)} over this digest and approval token "
        f"{claims.approval_jti} (SIMULATED)"
    )


# --- wording -------------------------------------------------------------------------------------


def _refusal(refused: CredentialRefused) -> str:
    return f"{refused.code}: {refused.message}"


def _where(trail: CaseTrail) -> str:
    if trail.final_status is not None:
        reason = f": {_shown(trail.final_reason)}" if trail.final_reason else ""
        return f"the case ended {trail.final_status.value}{reason}"
    if trail.run_end is not None:
        return f"this run {trail.run_end}"
    return "the case is still running"


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _short(digest: str) -> str:
    return f"{digest[:16]}…" if len(digest) > 16 else _shown(digest)


def _shown(value: object) -> str:
    """A value from the history as one short, printable piece of text (it may come from anyone)."""
    text = str(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 60 else text[:57] + "..."
