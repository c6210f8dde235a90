"""Forged and misused approvals, each sent straight to the commerce server (bypassing any workflow).

Each attack starts from a valid approval of alice's QH-1001 (chen's signed token, built by the
``refund_approval`` fixture) and turns it into what an attacker could send: a claimed name, another
signer's key, another case's or proposal's token, a late signature, ``alg: none``, a customer's own
key. The same table runs in-process, over stdio and over HTTP; every one must be refused with the
code (and the credential's reason in the message) named here, and pay nothing.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from contracts.commerce import RefundApproval
from contracts.credentials import COMMERCE_KID, ISSUER_KID, SETTLE_WINDOW, approval_claims, sign
from contracts.passkey import ReviewStatement, encode_passkey_approval, passkey_approval_from_browser, review_challenge
from keystore import demo_identity, load_private_key, private_key_path, reviewer_kid
from tests.conftest import DemoKeys
from tests.credentials_support import CHEN_PASSKEY

CHEN = reviewer_kid("chen")
MEI = reviewer_kid("mei")


def key_of(keys: DemoKeys, kid: str) -> Ed25519PrivateKey:
    return load_private_key(private_key_path(keys.state_dir, kid))


def chen_claims(approval: RefundApproval, *, now: datetime | None = None, **changes: Any) -> dict[str, Any]:
    """The claims chen would sign for ``approval``'s proposal, with ``changes`` applied."""
    claims = approval_claims(
        demo_identity("chen"),
        case_id=approval.proposal.case_id,
        digest=approval.proposal.digest(),
        decision="approve",
        now=now or datetime.now(UTC),
        jti=uuid.uuid4().hex,
    )
    return claims | changes


def with_token(approval: RefundApproval, token: str | None, **fields: Any) -> RefundApproval:
    return approval.model_copy(update={"approval_token": token, **fields})


def signed_with(
    key_kid: str | None, *, header_kid: str, **changes: Any
) -> Callable[[RefundApproval, DemoKeys], RefundApproval]:
    """Chen's claims signed with the key ``key_kid`` (None: a key pair the attacker made) as ``header_kid``."""

    def build(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
        key = Ed25519PrivateKey.generate() if key_kid is None else key_of(keys, key_kid)
        return with_token(approval, sign(chen_claims(approval, **changes), key, kid=header_kid))

    return build


def alg_none(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    header = {"alg": "none", "typ": "JWT", "kid": CHEN}
    return with_token(approval, f"{part(header)}.{part(chen_claims(approval))}.")


def tampered(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    """Chen's real token for another case, its payload rewritten to this case, signature kept."""
    token = sign(chen_claims(approval, case_id="case-elsewhere"), key_of(keys, CHEN), kid=CHEN)
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["case_id"] = approval.proposal.case_id
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return with_token(approval, f"{header}.{forged}.{signature}")


def mei_as_herself(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    """Mei's own valid signature (reviewer of another tenant), the approval naming her."""
    claims = chen_claims(approval, sub="mei", tenant="south")
    return with_token(approval, sign(claims, key_of(keys, MEI), kid=MEI), reviewer="mei")


def mei_named_chen(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    """Mei's own valid signature, the approval claiming chen approved."""
    claims = chen_claims(approval, sub="mei", tenant="south")
    return with_token(approval, sign(claims, key_of(keys, MEI), kid=MEI))


def reproposed(
    approval: RefundApproval, keys: DemoKeys, *, expires_at: datetime, signed_at: datetime
) -> RefundApproval:
    """The same order and quote, a proposal expiring at ``expires_at``, chen signing at ``signed_at``."""
    proposal = approval.proposal.model_copy(update={"expires_at": expires_at})
    late = approval.model_copy(update={"proposal": proposal, "digest": proposal.digest()})
    return with_token(late, sign(chen_claims(late, now=signed_at), key_of(keys, CHEN), kid=CHEN))


def signed_after_expiry(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    now = datetime.now(UTC)
    return reproposed(approval, keys, expires_at=now - timedelta(seconds=5), signed_at=now)


def older_than_settle_window(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    signed_at = datetime.now(UTC) - SETTLE_WINDOW - timedelta(minutes=1)
    return reproposed(approval, keys, expires_at=signed_at + timedelta(minutes=5), signed_at=signed_at)


def signed_19s_before_expiry(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    """Approved in time (19 s before the proposal expired), paid after the expiry: a crashed worker's retry."""
    expired_at = datetime.now(UTC) - timedelta(seconds=40)
    return reproposed(approval, keys, expires_at=expired_at, signed_at=expired_at - timedelta(seconds=19))


def chen_passkey(
    *, signed_digest: str | None = None, user_verified: bool = True, relabelled: bool = False
) -> Callable[[RefundApproval, DemoKeys], RefundApproval]:
    """chen's passkey approval (the session's enrolled test-double passkey) of the approval's case: the
    browser signs a statement naming ``signed_digest`` (default: this proposal's), with or without user
    verification; ``relabelled``: the statement is then edited to name this proposal's digest."""

    def build(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
        signed = ReviewStatement(
            case_id=approval.proposal.case_id,
            digest=signed_digest or approval.proposal.digest(),
            decision="approve",
            reviewer="chen",
            nonce=secrets.token_urlsafe(16),
            issued_at=int(datetime.now(UTC).timestamp()),
        )
        CHEN_PASSKEY.user_verified = user_verified
        try:
            credential = CHEN_PASSKEY.assert_(review_challenge(signed))
        finally:
            CHEN_PASSKEY.user_verified = True
        sent = signed.model_copy(update={"digest": approval.proposal.digest()}) if relabelled else signed
        return with_token(approval, encode_passkey_approval(passkey_approval_from_browser(sent, credential)))

    return build


@dataclass(frozen=True)
class Attack:
    build: Callable[[RefundApproval, DemoKeys], RefundApproval]
    code: str
    """The refusal's error code."""
    reason: str
    """The credential's own code, named in the refusal's message."""


def _no_token(approval: RefundApproval, keys: DemoKeys) -> RefundApproval:
    return with_token(approval, None)


ATTACKS: dict[str, Attack] = {
    "names chen, no token": Attack(_no_token, "approval_signature_required", "signed approval"),
    "mei's key as chen's kid": Attack(
        signed_with("reviewer:mei", header_kid=CHEN), "approval_signature_invalid", "bad_signature"
    ),
    "mei's kid claiming chen": Attack(
        signed_with("reviewer:mei", header_kid=MEI), "approval_signature_invalid", "wrong_signer"
    ),
    "mei's own approval": Attack(mei_as_herself, "approval_invalid", "reviewer_of_another_tenant"),
    "mei signs, approval names chen": Attack(mei_named_chen, "approval_invalid", "reviewer_mismatch"),
    "chen's token for another case": Attack(
        signed_with(CHEN, header_kid=CHEN, case_id="case-elsewhere"), "approval_invalid", "token_for_another_case"
    ),
    "chen's token for another digest": Attack(
        signed_with(CHEN, header_kid=CHEN, digest="ab" * 32), "approval_invalid", "digest_mismatch"
    ),
    "chen's token rewritten to this case": Attack(tampered, "approval_signature_invalid", "bad_signature"),
    "chen's rejection": Attack(
        signed_with(CHEN, header_kid=CHEN, decision="reject"), "approval_invalid", "not_an_approval"
    ),
    "signed after the proposal expired": Attack(signed_after_expiry, "approval_expired", "proposal_expired"),
    "older than the settle window": Attack(older_than_settle_window, "approval_expired", "settle_window_passed"),
    "alg none": Attack(alg_none, "approval_signature_invalid", "wrong_algorithm"),
    "issuer key as reviewer": Attack(
        signed_with(ISSUER_KID, header_kid=ISSUER_KID), "approval_signature_invalid", "wrong_signer"
    ),
    "issuer key as chen's kid": Attack(
        signed_with(ISSUER_KID, header_kid=CHEN), "approval_signature_invalid", "bad_signature"
    ),
    "commerce key as reviewer": Attack(
        signed_with(COMMERCE_KID, header_kid=COMMERCE_KID), "approval_signature_invalid", "wrong_signer"
    ),
    "customer's own key as chen's kid": Attack(
        signed_with(None, header_kid=CHEN), "approval_signature_invalid", "bad_signature"
    ),
    "chen's passkey for another proposal": Attack(
        chen_passkey(signed_digest="ab" * 32), "approval_invalid", "digest_mismatch"
    ),
    "chen's passkey relabelled to this proposal": Attack(
        chen_passkey(signed_digest="ab" * 32, relabelled=True),
        "approval_signature_invalid",
        "passkey_challenge_mismatch",
    ),
    "chen's passkey without user verification": Attack(
        chen_passkey(user_verified=False), "approval_signature_invalid", "passkey_user_not_verified"
    ),
    "customer's own key as her own kid": Attack(
        signed_with(None, header_kid=reviewer_kid("alice"), sub="alice"), "approval_signature_invalid", "unknown_signer"
    ),
}
