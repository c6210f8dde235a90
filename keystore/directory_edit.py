"""Edits of the support directory (:class:`contracts.directory.Directory`): pure functions, each taking
a directory and returning a new one, never touching a file or a key. ``starter.py directory`` writes
what they return.

Every result is built again through the :class:`Directory` model, so an edit can never produce a
document that the worker or the commerce server would refuse; a refused edit raises
:class:`DirectoryEditError` with a one-sentence message and the original directory stays as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from contracts.action_policy import ActionKind, ActionRule
from contracts.directory import DIRECTORY_FORMAT, ApprovalPolicy, Directory, Passkey, Person
from contracts.identity import Role
from keystore.directory_file import first_problem


class DirectoryEditError(ValueError):
    """A refused edit; the message is one sentence a person can act on."""


def add_tenant(
    directory: Directory, tenant: str, display_name: str | None = None, policies: str | None = None
) -> Directory:
    """``directory`` with a new tenant (one reviewer approves every refund until a policy is set) that
    follows its own policy documents and refund rule, or ``policies``' (another listed tenant's)."""
    if directory.tenant(tenant) is not None:
        raise DirectoryEditError(f"tenant {tenant!r} is already in the directory")
    if policies is not None and directory.tenant(policies) is None:
        raise DirectoryEditError(f"--policies names unknown tenant {policies!r}")
    entry = {"tenant": tenant, "display_name": display_name or tenant, "policies": policies}
    return _rebuilt(directory, tenants=[*directory.tenants, entry])


def _check_new_person(directory: Directory, subject: str, tenant: str) -> None:
    """Refuse a person whose tenant is not listed, or whose subject already is (in any tenant: a
    subject belongs to one tenant, so a second tenant for a subject is the same refusal)."""
    if directory.tenant(tenant) is None:
        raise DirectoryEditError(f"unknown tenant {tenant!r}")
    existing = directory.person(subject)
    if existing is not None:
        raise DirectoryEditError(f"{subject!r} is already in the directory (tenant {existing.tenant})")


def add_person(
    directory: Directory,
    subject: str,
    tenant: str,
    role: Role,
    display_name: str,
    jwk: dict[str, Any] | None = None,
) -> Directory:
    """``directory`` with a new person; a reviewer's public key ``jwk`` (named by its ``kid``) is
    published with them. A customer holds no key: the issuer's applicant tokens vouch for customers."""
    _check_new_person(directory, subject, tenant)
    if jwk is not None and role is not Role.REVIEWER:
        raise DirectoryEditError(f"{subject!r} is a customer and holds no key (applicant tokens vouch for customers)")
    kids = [_kid_of(jwk)] if jwk is not None else []
    person = {"subject": subject, "tenant": tenant, "role": role, "display_name": display_name, "kids": kids}
    keys = [*directory.keys, jwk] if jwk is not None else directory.keys
    return _rebuilt(directory, people=[*directory.people, person], keys=keys)


def add_customers(directory: Directory, tenant: str, customers: Iterable[tuple[str, str]]) -> Directory:
    """``directory`` with many new customers of ``tenant`` at once, each ``(subject, display name)``, validated
    once (an import of a merchant's customer list; :func:`add_person` adds one)."""
    if directory.tenant(tenant) is None:
        raise DirectoryEditError(f"unknown tenant {tenant!r}")
    people = [
        {"subject": subject, "tenant": tenant, "role": Role.CUSTOMER, "display_name": name[:80], "kids": []}
        for subject, name in customers
    ]
    return _rebuilt(directory, people=[*directory.people, *people])


def set_policy(directory: Directory, tenant: str, two_reviewers_from_cents: int | None) -> Directory:
    """``directory`` with ``tenant``'s approval policy: two distinct reviewers for refunds of this many
    cents or more, or (None) one reviewer for every refund."""
    if directory.tenant(tenant) is None:
        raise DirectoryEditError(f"unknown tenant {tenant!r}")
    policy = ApprovalPolicy.model_construct(two_reviewers_from_cents=two_reviewers_from_cents)
    tenants = [
        entry.model_copy(update={"approval": policy}) if entry.tenant == tenant else entry
        for entry in directory.tenants
    ]
    return _rebuilt(directory, tenants=tenants)


def set_action(directory: Directory, tenant: str, kind: ActionKind, rule: ActionRule | None) -> Directory:
    """``directory`` with ``tenant`` allowing ``kind`` under ``rule``, or (None) denying it again."""
    entry = directory.tenant(tenant)
    if entry is None:
        raise DirectoryEditError(f"unknown tenant {tenant!r}")
    actions = {name: existing for name, existing in entry.actions.items() if name != kind}
    if rule is not None:
        actions[kind] = rule
    tenants = [
        current.model_copy(update={"actions": actions}) if current.tenant == tenant else current
        for current in directory.tenants
    ]
    return _rebuilt(directory, tenants=tenants)


def set_escalation(directory: Directory, tenant: str, reviewer: str | None) -> Directory:
    """``directory`` with ``tenant`` asking ``reviewer`` (one of its reviewers) to decide a proposal that nears
    its expiry undecided, or (None) asking nobody."""
    if directory.tenant(tenant) is None:
        raise DirectoryEditError(f"unknown tenant {tenant!r}")
    tenants = [
        current.model_copy(update={"escalation_reviewer": reviewer}) if current.tenant == tenant else current
        for current in directory.tenants
    ]
    return _rebuilt(directory, tenants=tenants)


def keyed_person(directory: Directory, subject: str) -> Person:
    """The person ``subject``, who must hold at least one key (so a customer is refused)."""
    person = _listed(directory, subject)
    if not person.kids:
        role = f"a {person.role.value} of tenant {person.tenant}"
        raise DirectoryEditError(f"{subject!r} holds no key to rotate ({role})")
    return person


def rotate_key(directory: Directory, subject: str, new_jwk: dict[str, Any]) -> Directory:
    """``directory`` where ``subject`` holds only ``new_jwk``: all their previous kids, and those public
    keys, are gone at once (no grace period), so an approval signed with an old key no longer verifies."""
    person = keyed_person(directory, subject)
    new_kid = _kid_of(new_jwk)
    if new_kid in person.kids:
        raise DirectoryEditError(f"{subject!r} already holds key {new_kid!r}")
    people = [entry.model_copy(update={"kids": [new_kid]}) if entry is person else entry for entry in directory.people]
    return _rebuilt(directory, people=people, keys=[*_keys_without(directory, person.kids), new_jwk])


def add_passkey(directory: Directory, subject: str, passkey: Passkey) -> Directory:
    """``directory`` where reviewer ``subject`` also holds ``passkey`` (the reviewer console enrols it)."""
    person = _listed(directory, subject)
    if person.role is not Role.REVIEWER:
        raise DirectoryEditError(f"{subject!r} is a {person.role.value}: only reviewers hold passkeys")
    people = [
        entry.model_copy(update={"passkeys": [*entry.passkeys, passkey]}) if entry is person else entry
        for entry in directory.people
    ]
    return _rebuilt(directory, people=people)


def remove_person(directory: Directory, subject: str) -> Directory:
    """``directory`` without ``subject`` and without their public keys."""
    person = _listed(directory, subject)
    people = [entry for entry in directory.people if entry is not person]
    return _rebuilt(directory, people=people, keys=_keys_without(directory, person.kids))


def _listed(directory: Directory, subject: str) -> Person:
    person = directory.person(subject)
    if person is None:
        raise DirectoryEditError(f"{subject!r} is not in the directory")
    return person


def _kid_of(jwk: dict[str, Any]) -> str:
    kid = jwk.get("kid")
    if not isinstance(kid, str) or not kid:
        raise DirectoryEditError("the public key has no kid")
    return kid


def _keys_without(directory: Directory, kids: Iterable[str]) -> list[dict[str, Any]]:
    gone = set(kids)
    return [entry for entry in directory.keys if entry.get("kid") not in gone]


def _rebuilt(
    directory: Directory,
    *,
    tenants: list[Any] | None = None,
    people: list[Any] | None = None,
    keys: list[dict[str, Any]] | None = None,
) -> Directory:
    """A new directory validated from plain data (every field and every cross-check again, since a
    model instance handed to pydantic is not re-validated), or the first problem as an edit error."""
    document = {
        "format": DIRECTORY_FORMAT,
        "tenants": [_plain(entry) for entry in (directory.tenants if tenants is None else tenants)],
        "people": [_plain(entry) for entry in (directory.people if people is None else people)],
        "keys": [dict(entry) for entry in (directory.keys if keys is None else keys)],
    }
    try:
        return Directory.model_validate(document)
    except ValidationError as error:
        raise DirectoryEditError(first_problem(error)) from None


def _plain(entry: BaseModel | dict[str, Any]) -> dict[str, Any]:
    return entry.model_dump(mode="json") if isinstance(entry, BaseModel) else dict(entry)
