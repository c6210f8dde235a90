"""Signing with the key files under a state dir: the login service's applicant tokens and customers'
confirmations, a reviewer's approvals. Used by the command line (standing in for the login service and
for the reviewer's own device) and by tests; never by the worker, which holds no private key."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from contracts.action_credentials import confirmation_claims
from contracts.credentials import ISSUER_KID, SignedReview, applicant_claims, approval_claims, sign
from contracts.errors import ConfigurationError
from contracts.identity import Identity
from keystore import directory_location, load_directory, load_private_key, private_key_path
from keystore.codes import KeystoreErrorCode


class KeyFileSigner:
    """Signs as the holders of the private keys in ``state_dir/keys`` (each read when it signs)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir)

    def applicant_token(
        self, identity: Identity, case_id: str, *, now: datetime | None = None, lifetime: timedelta | None = None
    ) -> str:
        """The login service's word that ``identity`` asks ``case_id`` (signed with the issuer key), valid
        for ``lifetime`` (default :data:`contracts.credentials.APPLICANT_TOKEN_TTL`)."""
        claims = applicant_claims(
            identity,
            case_id=case_id,
            now=now or datetime.now(UTC),
            jti=uuid.uuid4().hex,
            **({"lifetime": lifetime} if lifetime is not None else {}),
        )
        return sign(claims, load_private_key(private_key_path(self.state_dir, ISSUER_KID)), kid=ISSUER_KID)

    def confirmation_token(self, customer: Identity, *, case_id: str, digest: str, now: datetime | None = None) -> str:
        """The sign-in service's word that the signed-in ``customer`` said yes to the proposal ``digest``
        (:mod:`contracts.action_credentials`), signed with the issuer key."""
        claims = confirmation_claims(
            customer, case_id=case_id, digest=digest, now=now or datetime.now(UTC), jti=uuid.uuid4().hex
        )
        return sign(claims, load_private_key(private_key_path(self.state_dir, ISSUER_KID)), kid=ISSUER_KID)

    def reviewer_key_id(self, reviewer: Identity) -> str:
        """The kid of ``reviewer``'s current key: the last the directory lists for them."""
        person = load_directory(directory_location(self.state_dir)).person(reviewer.subject)
        if person is None or not person.kids:
            raise ConfigurationError(
                KeystoreErrorCode.REVIEWER_KEY_MISSING,
                f"The directory lists no key for {reviewer.subject!r}; add them as a reviewer.",
            )
        return person.kids[-1]

    def approval_token(
        self,
        reviewer: Identity,
        *,
        case_id: str,
        digest: str,
        decision: str,
        now: datetime | None = None,
        kid: str | None = None,
    ) -> str:
        """``reviewer``'s signed decision on exactly this proposal, signed with that reviewer's own key
        (``kid``, default their current key in the directory)."""
        claims = approval_claims(
            reviewer,
            case_id=case_id,
            digest=digest,
            decision=decision,
            now=now or datetime.now(UTC),
            jti=uuid.uuid4().hex,
        )
        kid = kid or self.reviewer_key_id(reviewer)
        return sign(claims, load_private_key(private_key_path(self.state_dir, kid)), kid=kid)

    def signed_review(self, reviewer: Identity, *, case_id: str, digest: str, decision: str) -> SignedReview:
        token = self.approval_token(reviewer, case_id=case_id, digest=digest, decision=decision)
        return SignedReview(approval_token=token)
