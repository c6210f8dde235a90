"""The support directory: the merchant's tenants, people and public keys, and each tenant's approval
policy. Data, never code: one JSON document (``SUPPORT_DIRECTORY``, a file or an https URL) that the
worker, the commerce server and ``starter.py`` each read for themselves. Pure: no files, no clock.

Who asks is an applicant token whose claims agree with a customer here; who approves is the signer of
an approval whose key this directory lists for a reviewer of the applicant's tenant. A name in a
payload proves nothing. The document is a JSON Web Key Set too (its ``keys``), so every public key,
the services' and the people's, is published in one place:

==================  ===========================  =================================================
``kid``             held by                       signs
==================  ===========================  =================================================
``issuer``          the built-in login service    applicant tokens (subject, tenant, role, case id)
a reviewer's kid    that reviewer, and only them  approval tokens (case id, digest, decision)
``commerce``        the commerce server           receipts (approval token id, digest, amounts)
==================  ===========================  =================================================

A reviewer may also hold passkeys (:class:`Passkey`, WebAuthn credentials enrolled at the reviewer
console): each is published here by its credential id, with its COSE public key and the relying party
and origin it was made for, and signs passkey approvals (:mod:`contracts.passkey`).

A case records the slice of the directory that can decide it (:meth:`Directory.for_case`) when its
applicant is verified, and decides its approvals from that record, deterministically, whatever the
document says later; the commerce server re-checks every approval with its own, current copy.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from contracts.action_policy import ActionKind, ActionRule
from contracts.actions import Agreement
from contracts.approval_claims import CredentialCode
from contracts.errors import AuthorizationError, WorkerErrorCode
from contracts.identity import Identity, Role

DIRECTORY_FORMAT = "support-directory/1"
ISSUER_KID = "issuer"
COMMERCE_KID = "commerce"
SERVICE_KIDS = (ISSUER_KID, COMMERCE_KID)
KEY_ALGORITHM = "EdDSA"
"""The algorithm of every key the directory publishes (Ed25519)."""
NAME_PATTERN = r"^[a-z][a-z0-9._-]{0,31}$"
"""Subjects and tenant ids: short, lower-case, safe in a file name, a search attribute and a log line."""
MAX_PEOPLE = 5000
MAX_KEYS_PER_PERSON = 4
MAX_PASSKEYS_PER_PERSON = 10
BASE64URL_PATTERN = r"^[A-Za-z0-9_-]+$"
"""Base64url without padding: how WebAuthn's JSON carries bytes."""


class ApprovalPolicy(BaseModel):
    """How many distinct reviewers of the tenant must approve a refund."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    two_reviewers_from_cents: int | None = Field(default=None, ge=1)
    """Refunds of this many cents or more need two distinct reviewers (four-eyes); None: one always."""

    def approvals_required(self, amount_cents: int) -> int:
        if self.two_reviewers_from_cents is not None and amount_cents >= self.two_reviewers_from_cents:
            return 2
        return 1


class ConversationPolicy(BaseModel):
    """How long a case waits for its customer, and how fast the customer may write."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idle_hours: float = Field(default=24.0, gt=0, le=24 * 30)
    """A case waiting for the customer's answer closes after this long without a message."""
    messages_per_minute: int = Field(default=60, ge=1, le=600)
    """A case takes at most this many customer messages in any minute; one more is refused as too frequent."""


class Tenant(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(pattern=NAME_PATTERN)
    display_name: str = Field(min_length=1, max_length=80)
    approval: ApprovalPolicy = ApprovalPolicy()
    conversation: ConversationPolicy = ConversationPolicy()
    policies: str | None = Field(default=None, pattern=NAME_PATTERN)
    """The tenant whose policy documents and refund rule this tenant follows (None: its own). A new
    merchant can adopt the packaged ``qinghe`` policies until it brings its own."""
    actions: dict[ActionKind, ActionRule] = Field(default_factory=dict)
    """The actions this tenant allows and who must agree to each; an action not named is denied."""
    escalation_reviewer: str | None = Field(default=None, pattern=NAME_PATTERN)
    """A reviewer of this tenant asked to decide a proposal nobody has agreed to as it nears its expiry
    (release 0.12 on; None: nobody is asked)."""

    @model_serializer(mode="wrap")
    def _without_empty_actions(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A tenant that allows no action and names no escalation reviewer is written as release 0.11 wrote
        it: its model forbids unknown fields, so its workers, and the cases they recorded, read it unchanged."""
        data: dict[str, Any] = handler(self)
        if not self.actions:
            data.pop("actions", None)
        if self.escalation_reviewer is None:
            data.pop("escalation_reviewer", None)
        return data


class Passkey(BaseModel):
    """A reviewer's WebAuthn credential, as enrolled: what checks the passkey approvals it signs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    credential_id: str = Field(min_length=16, max_length=1400, pattern=BASE64URL_PATTERN)
    public_key: str = Field(min_length=1, max_length=1000, pattern=BASE64URL_PATTERN)
    """The credential's COSE_Key, base64url."""
    rp_id: str = Field(min_length=1, max_length=253)
    """The relying party the credential is scoped to: the console's host (e.g. ``localhost``)."""
    origin: str = Field(min_length=1, max_length=300)
    """The console's origin (e.g. ``http://localhost:8090``): the only page whose assertions count."""
    enrolled_at: datetime


class Person(BaseModel):
    """A customer or a reviewer of one tenant, the kids of their public keys and, for a reviewer,
    their passkeys (reviewers sign)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(pattern=NAME_PATTERN)
    tenant: str = Field(pattern=NAME_PATTERN)
    role: Role
    display_name: str = Field(min_length=1, max_length=80)
    kids: list[str] = Field(default_factory=list, max_length=MAX_KEYS_PER_PERSON)
    passkeys: list[Passkey] = Field(default_factory=list, max_length=MAX_PASSKEYS_PER_PERSON)

    @model_serializer(mode="wrap")
    def _without_empty_passkeys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A person with no passkey is written as release 0.3 wrote them: its model forbids unknown
        fields, so its workers, draining their pinned cases, still read a directory nobody enrolled in."""
        data: dict[str, Any] = handler(self)
        if not self.passkeys:
            data.pop("passkeys", None)
        return data

    def identity(self) -> Identity:
        return Identity(subject=self.subject, tenant=self.tenant, role=self.role, display_name=self.display_name)


class DirectoryError(ValueError):
    """A directory document that breaks a rule; the message names the first problem."""


class Directory(BaseModel):
    """The whole document. Validation refuses duplicates, a person of an unknown tenant, a kid that no
    key or two people hold, a private key, a key that is not an Ed25519 public key (an RSA, EC or Ed448
    key, or one that cannot be read, is named and refused, never raised), a key whose ``alg`` is not
    :data:`KEY_ALGORITHM` (``none`` included), a passkey credential id held twice, and a passkey held by
    anyone but a reviewer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = Field(default=DIRECTORY_FORMAT, pattern=r"^support-directory/1$")
    tenants: list[Tenant] = Field(default_factory=list, max_length=500)
    people: list[Person] = Field(default_factory=list, max_length=MAX_PEOPLE)
    keys: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_PEOPLE * MAX_KEYS_PER_PERSON + 10)
    """The JSON Web Key Set: every published public key, each named by its ``kid``."""

    @model_validator(mode="after")
    def _consistent(self) -> Directory:
        problem = _first_problem(self)
        if problem is not None:
            raise DirectoryError(problem)
        return self

    # --- lookups -----------------------------------------------------------------------------------

    def tenant(self, tenant: str) -> Tenant | None:
        return next((entry for entry in self.tenants if entry.tenant == tenant), None)

    def person(self, subject: str) -> Person | None:
        return next((entry for entry in self.people if entry.subject == subject), None)

    def reviewers(self, tenant: str) -> list[Person]:
        return [entry for entry in self.people if entry.tenant == tenant and entry.role is Role.REVIEWER]

    def key(self, kid: str) -> dict[str, Any] | None:
        return next((entry for entry in self.keys if entry.get("kid") == kid), None)

    def owner_of(self, kid: str) -> Person | None:
        return next((entry for entry in self.people if kid in entry.kids), None)

    def passkey_holder(self, credential_id: str) -> tuple[Person, Passkey] | None:
        """The reviewer who holds the passkey ``credential_id``, and that passkey; None when nobody does."""
        for person in self.people:
            for passkey in person.passkeys:
                if passkey.credential_id == credential_id:
                    return person, passkey
        return None

    def identity(self, subject: str) -> Identity:
        """The person ``subject`` as an identity; ``unknown_person`` (authorization) when not listed."""
        person = self.person(subject)
        if person is None:
            raise AuthorizationError(
                CredentialCode.UNKNOWN_PERSON, f"{subject[:40]!r} is not in the support directory."
            )
        return person.identity()

    def check_listed(self, identity: Identity) -> str:
        """The subject of ``identity`` if the directory lists exactly that person (tenant, role, name);
        any other identity is refused with ``identity_rejected``. The check every worker-side caller of
        the commerce server makes, with its own copy of the directory, before acting for an applicant."""
        person = self.person(identity.subject)
        if person is None or person.identity() != identity:
            raise AuthorizationError(
                WorkerErrorCode.IDENTITY_REJECTED, "The applicant is not in the support directory."
            )
        return identity.subject

    def policy_tenant(self, tenant: str) -> str:
        """The tenant whose policies ``tenant`` follows (itself unless the directory says otherwise)."""
        entry = self.tenant(tenant)
        return entry.policies if entry is not None and entry.policies else tenant

    def approvals_required(self, tenant: str, amount_cents: int) -> int:
        """Distinct reviewers a refund of ``amount_cents`` needs in ``tenant`` (1 for an unknown tenant,
        which no reviewer can approve anyway)."""
        entry = self.tenant(tenant)
        return entry.approval.approvals_required(amount_cents) if entry is not None else 1

    def action_rule(self, tenant: str, kind: ActionKind) -> ActionRule | None:
        """The rule ``tenant`` declares for ``kind``; None (denied) when it declares none."""
        entry = self.tenant(tenant)
        return entry.actions.get(kind) if entry is not None else None

    def action_agreement(self, tenant: str, kind: ActionKind, amount_cents: int) -> Agreement | None:
        """Who must agree to an action of ``kind`` moving ``amount_cents`` in ``tenant`` (None: denied): the
        customer and the reviewers its rule names; a refund (``refund_order``) never fewer reviewers than the
        tenant's refund approval policy asks, so either way a case is refunded the same people approve it.
        The commerce server and the case's gate both ask this."""
        rule = self.action_rule(tenant, kind)
        if rule is None:
            return None
        reviewers = rule.reviewers_required(amount_cents)
        if kind is ActionKind.REFUND_ORDER:
            reviewers = max(reviewers, self.approvals_required(tenant, amount_cents))
        return Agreement(customer=rule.customer_confirms, reviewers=reviewers)

    def escalation_reviewer(self, tenant: str) -> str | None:
        """The reviewer ``tenant`` asks to decide a proposal that nears its expiry undecided (None: nobody)."""
        entry = self.tenant(tenant)
        return entry.escalation_reviewer if entry is not None else None

    def conversation_policy(self, tenant: str) -> ConversationPolicy:
        entry = self.tenant(tenant)
        return entry.conversation if entry is not None else ConversationPolicy()

    def for_case(self, applicant: str) -> Directory:
        """The slice that can decide a case of ``applicant``: their tenant and its policy, the applicant,
        the tenant's reviewers (with their passkeys), their keys and the service keys. Bounded by one
        tenant's reviewers, and it names no other tenant's people, so a case history carries nothing
        of theirs."""
        person = self.person(applicant)
        if person is None:
            raise DirectoryError(f"{applicant!r} is not in the directory")
        people = [person] + [entry for entry in self.reviewers(person.tenant) if entry.subject != applicant]
        kids = set(SERVICE_KIDS) | {kid for entry in people for kid in entry.kids}
        tenant = self.tenant(person.tenant)
        return Directory(
            tenants=[tenant] if tenant is not None else [],
            people=people,
            keys=[entry for entry in self.keys if entry.get("kid") in kids],
        )


def _first_problem(directory: Directory) -> str | None:
    tenants = [entry.tenant for entry in directory.tenants]
    if len(set(tenants)) != len(tenants):
        return f"tenant {_duplicate(tenants)!r} is listed twice"
    subjects = [entry.subject for entry in directory.people]
    if len(set(subjects)) != len(subjects):
        return f"person {_duplicate(subjects)!r} is listed twice (a subject belongs to one tenant)"
    kids = [str(entry.get("kid", "")) for entry in directory.keys]
    if len(set(kids)) != len(kids):
        return f"key {_duplicate(kids)!r} is listed twice"
    owned: dict[str, str] = {}
    for person in directory.people:
        if person.tenant not in tenants:
            return f"person {person.subject!r} belongs to unknown tenant {person.tenant!r}"
        for kid in person.kids:
            if kid not in kids:
                return f"person {person.subject!r} lists key {kid!r}, which the key set does not hold"
            if kid in owned or kid in SERVICE_KIDS:
                return f"key {kid!r} is listed for {owned.get(kid, 'a service')!r} and {person.subject!r}"
            owned[kid] = person.subject
    reviewers = {(person.subject, person.tenant) for person in directory.people if person.role is Role.REVIEWER}
    for tenant in directory.tenants:
        asked = tenant.escalation_reviewer
        if asked is not None and (asked, tenant.tenant) not in reviewers:
            return f"tenant {tenant.tenant!r} escalates to {asked!r}, who is not one of its reviewers"
    problem = _passkey_problem(directory.people)
    if problem is not None:
        return problem
    for entry in directory.keys:
        problem = _key_problem(entry)
        if problem is not None:
            return problem
    return None


def _passkey_problem(people: list[Person]) -> str | None:
    held: dict[str, str] = {}
    for person in people:
        if person.passkeys and person.role is not Role.REVIEWER:
            return f"person {person.subject!r} holds a passkey, but only a reviewer may"
        for passkey in person.passkeys:
            credential = passkey.credential_id
            if credential in held:
                return f"passkey {credential[:64]!r} is listed for {held[credential]!r} and {person.subject!r}"
            held[credential] = person.subject
    return None


def _key_problem(entry: dict[str, Any]) -> str | None:
    kid = entry.get("kid")
    if not isinstance(kid, str) or not kid:
        return "a key has no kid"
    if "d" in entry:
        return f"key {kid[:64]!r} is a private key; the directory publishes public keys only"
    if "alg" in entry and entry["alg"] != KEY_ALGORITHM:
        shown = str(entry["alg"])[:20]
        return f"key {kid[:64]!r} is for algorithm {shown!r}; the directory's keys are {KEY_ALGORITHM} only"
    try:
        key = jwt.PyJWK.from_dict(entry, algorithm=KEY_ALGORITHM).key
    except Exception as error:  # any entry a publisher can write is refused by name, never raised
        detail = " ".join(str(error).split())[:80] or type(error).__name__
        return f"key {kid[:64]!r} is not an Ed25519 public key ({detail})"
    if not isinstance(key, Ed25519PublicKey):
        return f"key {kid[:64]!r} is not an Ed25519 public key ({type(key).__name__[:40]})"
    return None


def _duplicate(values: list[str]) -> str:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return ""
