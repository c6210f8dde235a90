"""Who is acting: a person of the support directory (:mod:`contracts.directory`), as a value.

An identity is data the directory states and a credential proves; a name alone proves nothing. It is
resolved by the host (starter, worker, the commerce server from a verified token) and is never a model
tool argument.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Role(StrEnum):
    CUSTOMER = "customer"
    REVIEWER = "reviewer"


class Identity(BaseModel):
    """A person of one tenant in one role, as the directory lists them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    tenant: str
    role: Role
    display_name: str
