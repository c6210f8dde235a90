"""Who a bearer credential proves, before the channel asks a case anything.

The bearer is the built-in issuer's applicant token (bound to one case id:
:func:`contracts.credentials.verify_applicant_token`) or, where ``SUPPORT_APPLICANT_JWKS_URL`` names an
outside identity provider, its ID token (:meth:`keystore.outside_issuer.OutsideIssuer.verify`, which
binds no case: the case's own customer is checked against the case). Either way the directory, not
the token, says who the customer is. These are the checks the worker's ``verify_applicant`` activity
runs (:mod:`activities.case.credential_activities`), called here from the same functions; the case
verifies every message again itself.

A new conversation is judged as the worker judges a case's start: by the outside issuer when one is
configured, else by the built-in issuer, whose token names the new case's id. A further message or a
read takes either. A refusal is a :class:`ChannelRefused` carrying the customer's sentence code
(:class:`~contracts.conversation.MessageRefusal`); a key set or directory that cannot be read is a
:class:`~contracts.errors.SupportError` of its own class (the caller answers 503).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import jwt

from activities.case.credential_activities import BUILT_IN_ISSUER
from case_client import case_id_for
from contracts.approval_claims import CredentialCode
from contracts.conversation import MessageRefusal
from contracts.credentials import ISSUER_KID, CredentialRefused, verify_applicant_token
from contracts.identity import Identity
from customer_channel.bodies import CASE_ID_PATTERN
from keystore.directory_file import DirectorySource
from keystore.outside_issuer import OutsideIssuer

BEARER = "bearer"
CASE_ID = re.compile(CASE_ID_PATTERN)


class ChannelRefused(Exception):
    """A request refused before the case was asked; ``refusal`` names the sentence."""

    def __init__(self, refusal: MessageRefusal) -> None:
        super().__init__(refusal.value)
        self.refusal = refusal


@dataclass(frozen=True)
class Customer:
    """A verified credential: the customer as the directory lists them, who vouched, and for which case."""

    identity: Identity
    issuer: str
    case_id: str
    """The case the credential is for: the built-in token's claim, or (outside, new case) a fresh id."""
    token: str

    @property
    def key(self) -> str:
        """What the rate limits count by: the tenant and subject the credential proved."""
        return f"{self.identity.tenant}:{self.identity.subject}"

    def owns(self, tenant: str, customer: str) -> bool:
        return self.identity.tenant == tenant and self.identity.subject == customer


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is none."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == BEARER and token else None


def _refusal_of(refused: CredentialRefused) -> MessageRefusal:
    if refused.code == CredentialCode.TOKEN_EXPIRED:
        return MessageRefusal.EXPIRED
    if refused.code == CredentialCode.TOKEN_FOR_ANOTHER_CASE:
        return MessageRefusal.ANOTHER_CASE
    return MessageRefusal.NOT_VERIFIED


def _built_in(token: str) -> bool:
    """Whether ``token`` claims to be the built-in issuer's (its header names the issuer key)."""
    try:
        return jwt.get_unverified_header(token).get("kid") == ISSUER_KID
    except Exception:  # anything a sender can put in a header: not the built-in issuer's
        return False


def _claimed_case(token: str) -> str:
    """The ``case_id`` a built-in token claims, before the signature is checked (then it is)."""
    try:
        claimed = jwt.decode(token, options={"verify_signature": False}).get("case_id")
    except Exception:  # an unreadable token: refused by the caller
        claimed = None
    if not isinstance(claimed, str) or not CASE_ID.fullmatch(claimed):
        raise ChannelRefused(MessageRefusal.NOT_VERIFIED)
    return claimed


class BearerVerifier:
    """Verifies bearer credentials against the directory (and the outside issuer, where configured)."""

    def __init__(
        self,
        directory: DirectorySource,
        outside_issuer: OutsideIssuer | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.directory = directory
        self.outside_issuer = outside_issuer
        self.clock = clock

    async def for_new_case(self, token: str, request_key: str | None = None) -> Customer:
        """The customer a new conversation's credential proves, and the new case's id: the built-in
        token's, else one derived from the customer and ``request_key`` (the same key, the same case),
        else a fresh one."""
        if self.outside_issuer is not None:
            identity = await self._outside(token, self.outside_issuer)
            return Customer(identity, self.outside_issuer.issuer, case_id_for(request_key, identity), token)
        case_id = _claimed_case(token)
        return Customer(self._built_in(token, case_id), BUILT_IN_ISSUER, case_id, token)

    async def for_case(self, token: str, case_id: str) -> Customer:
        """The customer a credential proves for ``case_id`` (a built-in token must name this case)."""
        if _built_in(token) or self.outside_issuer is None:
            return Customer(self._built_in(token, case_id), BUILT_IN_ISSUER, case_id, token)
        return Customer(await self._outside(token, self.outside_issuer), self.outside_issuer.issuer, case_id, token)

    def _built_in(self, token: str, case_id: str) -> Identity:
        try:
            return verify_applicant_token(token, self.directory.current(), case_id=case_id, now=self.clock())
        except CredentialRefused as refused:
            raise ChannelRefused(_refusal_of(refused)) from None

    async def _outside(self, token: str, issuer: OutsideIssuer) -> Identity:
        directory = self.directory.current()
        try:  # the key set may be fetched over the network: off the event loop
            return await asyncio.to_thread(issuer.verify, token, directory, now=self.clock())
        except CredentialRefused as refused:
            raise ChannelRefused(_refusal_of(refused)) from None
