"""The fixed registry of demonstration profiles.

A profile name selects a trusted local identity. It is resolved by the host (starter, worker, the
commerce server at start-up or from a signed token) and is never a model tool argument.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from contracts.errors import AuthorizationError, WorkerErrorCode


class Role(StrEnum):
    CUSTOMER = "customer"
    REVIEWER = "reviewer"


class Identity(BaseModel):
    """Who is acting: a profile name bound to a tenant and a role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    tenant: str
    role: Role
    display_name: str


PROFILES: dict[str, Identity] = {
    "alice": Identity(subject="alice", tenant="qinghe", role=Role.CUSTOMER, display_name="Alice"),
    "bob": Identity(subject="bob", tenant="qinghe", role=Role.CUSTOMER, display_name="Bob"),
    "chen": Identity(subject="chen", tenant="qinghe", role=Role.REVIEWER, display_name="Chen"),
    "lin": Identity(subject="lin", tenant="south", role=Role.CUSTOMER, display_name="Lin"),
    "mei": Identity(subject="mei", tenant="south", role=Role.REVIEWER, display_name="Mei"),
}


def resolve_profile(name: str) -> Identity:
    """Return the identity for a profile name, or raise a typed authorization error."""
    identity = PROFILES.get(name)
    if identity is None:
        known = ", ".join(sorted(PROFILES))
        raise AuthorizationError("unknown_profile", f"Unknown profile {name!r}; known profiles: {known}.")
    return identity


def reviewer_for(tenant: str) -> Identity:
    """The profile that reviews ``tenant``'s refund proposals (one reviewer per demonstration tenant)."""
    for identity in PROFILES.values():
        if identity.role is Role.REVIEWER and identity.tenant == tenant:
            return identity
    raise AuthorizationError("unknown_tenant", f"No reviewer profile for tenant {tenant!r}.")


def check_registered(identity: Identity) -> str:
    """The subject of ``identity`` if it is a registry profile exactly as the registry defines it; any other
    identity (an unknown subject, another tenant, role or name) is refused with ``identity_rejected``.

    The one check every worker-side caller of the commerce server makes before acting for an applicant."""
    if PROFILES.get(identity.subject) != identity:
        raise AuthorizationError(WorkerErrorCode.IDENTITY_REJECTED, "The applicant is not a registered profile.")
    return identity.subject
