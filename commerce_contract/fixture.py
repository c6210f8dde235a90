"""What the kit needs to know about the target server's data, and the keys it signs with.

The fixture names a customer, their refundable orders (the kit pays the first that the published rule
still quotes as eligible, so a second run pays the next one), another customer's order and an order id
that does not exist. The default is the demo data of ``commerce_server/fixtures/commerce.json``.

The backstop checks (the applicant token, the tenant's approval policy, the reviewer's tenant) need
people and a policy that the directory states: another customer of the directory (for an applicant
token of someone else), a reviewer of another tenant whose key the kit holds, and an order of the
customer whose refund the customer's tenant's policy needs two reviewers for. The fixture may name
each; what it does not name the kit looks up in the directory, and a check with nothing to look up is
reported as not checked (``SKIP``), never as passed.

The keys are the ones the target server was configured with: the directory it checks approvals and
bearer tokens with, the issuer's private key (applicant tokens) and the tenant's reviewers' private
keys (approval tokens), in ``<state dir>/keys`` as ``starter.py init`` writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.actions import SKU_FORMAT
from contracts.commerce import ORDER_ID_FORMAT
from contracts.directory import Directory
from contracts.errors import ConfigurationError
from contracts.identity import Identity, Role
from keystore import keys_dir, load_directory, private_key_path
from keystore.directory_file import DIRECTORY_FILE, first_problem
from keystore.signers import KeyFileSigner


class FixtureErrorCode(StrEnum):
    FIXTURE_UNREADABLE = "fixture_unreadable"
    FIXTURE_INVALID = "fixture_invalid"
    FIXTURE_CUSTOMER_UNKNOWN = "fixture_customer_unknown"
    REVIEWER_KEYS_MISSING = "reviewer_keys_missing"


class Fixture(BaseModel):
    """The target server's records the kit reads and pays."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    customer: str = Field(min_length=1, max_length=100)
    """The customer the kit acts for (over stdio, the one the server command is started for)."""
    refundable_orders: list[str] = Field(min_length=1)
    """The customer's refundable orders; each run pays the first the rule still quotes as eligible."""
    foreign_order: str = Field(pattern=ORDER_ID_FORMAT)
    """Another customer's order: it must read exactly like a missing one."""
    cancellable_orders: list[str] = Field(default_factory=list)
    """The customer's orders that are still processing; each run cancels the first that still is (the
    action checks). None: those checks are not run."""
    returnable_orders: list[str] = Field(default_factory=list)
    """The customer's delivered orders inside the returns window whose items are not back yet; the kit
    previews a return of the first (never executes one). None: the return checks are not run."""
    exchange_sku: str | None = Field(default=None, pattern=SKU_FORMAT)
    """Another available variant of the first returnable order's product: the kit previews an exchange of
    that order for it (never executes one). None: the exchange checks are not run."""
    missing_order: str = Field(default="QH-9999", pattern=ORDER_ID_FORMAT)
    """An order id no one has."""
    unknown_sku: str = Field(default="ZZZZ-99")
    """A SKU of no product."""
    other_customer: str | None = Field(default=None, min_length=1, max_length=100)
    """Another customer of the directory, best of the same tenant: the kit sends an approval carrying an
    applicant token the issuer signed for them (the kit needs no key of theirs). Default: the first other
    customer of the customer's tenant the directory lists, else of any tenant."""
    foreign_reviewer: str | None = Field(default=None, min_length=1, max_length=100)
    """A reviewer of another tenant whose private key the kit holds: their real signature must not pay
    this customer's refund. Default: the first such reviewer the directory lists."""
    four_eyes_order: str | None = Field(default=None, pattern=ORDER_ID_FORMAT)
    """An order of the customer that the published rule quotes eligible for an amount the tenant's policy
    (the directory's ``approval.two_reviewers_from_cents``) needs two distinct reviewers for; it is never
    paid, one reviewer's approval of it must be refused. Default: the first refundable order that
    qualifies; named here, an order that does not qualify fails the check."""


DEMO_FIXTURE = Fixture(
    customer="alice",
    refundable_orders=["QH-1001", "QH-1002", "QH-1009"],
    foreign_order="QH-2001",
    cancellable_orders=["QH-1006"],
    returnable_orders=["QH-1004"],
    exchange_sku="DESK-09",
)
"""The seeded demo data (``commerce_server/fixtures/commerce.json``): alice's three refundable orders,
so three runs pass on one database before the kit has nothing left to pay, her one processing order,
which the first run cancels, and her desk stand delivered four days before the fixture's today, whose
return, and exchange for the large stand, every run previews."""


def load_fixture(path: Path | None) -> Fixture:
    """The fixture file at ``path`` (JSON), or the demo fixture; a bad file is a configuration error."""
    if path is None:
        return DEMO_FIXTURE
    try:
        return Fixture.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise ConfigurationError(
            FixtureErrorCode.FIXTURE_UNREADABLE, f"cannot read the fixture {path}: {error.strerror}"
        ) from None
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            FixtureErrorCode.FIXTURE_INVALID, f"the fixture {path} is not JSON ({error.msg})"
        ) from None
    except ValidationError as error:
        raise ConfigurationError(
            FixtureErrorCode.FIXTURE_INVALID, f"the fixture {path} is invalid: {first_problem(error)}"
        ) from None


@dataclass(frozen=True)
class KitKeys:
    """The directory the target server trusts and the private keys the kit signs with."""

    state_dir: Path
    directory: Directory

    @classmethod
    def load(cls, state_dir: Path, directory_location: str | None = None) -> KitKeys:
        """The keys under ``state_dir/keys``; the directory there unless ``directory_location`` names one."""
        location = directory_location or str(keys_dir(state_dir) / DIRECTORY_FILE)
        return cls(Path(state_dir), load_directory(location))

    @property
    def signer(self) -> KeyFileSigner:
        return KeyFileSigner(self.state_dir)

    def customer(self, subject: str) -> Identity:
        """``subject`` as the directory lists them; a configuration error unless a customer."""
        person = self.directory.person(subject)
        if person is None or person.role is not Role.CUSTOMER:
            raise ConfigurationError(
                FixtureErrorCode.FIXTURE_CUSTOMER_UNKNOWN, f"the directory lists no customer {subject!r}"
            )
        return person.identity()

    def reviewers(self, tenant: str, count: int) -> list[tuple[Identity, str]]:
        """``count`` distinct reviewers of ``tenant`` whose current private key the kit holds, each with
        that key's kid; a configuration error when there are fewer."""
        held = [
            (person.identity(), person.kids[-1])
            for person in self.directory.people
            if person.role is Role.REVIEWER
            and person.tenant == tenant
            and person.kids
            and private_key_path(self.state_dir, person.kids[-1]).exists()
        ]
        if len(held) < count:
            raise ConfigurationError(
                FixtureErrorCode.REVIEWER_KEYS_MISSING,
                f"the kit needs {count} reviewer key(s) of tenant {tenant!r} under {keys_dir(self.state_dir)}; "
                f"it holds {len(held)}",
            )
        return held[:count]

    def other_customer(self, customer: Identity, named: str | None) -> Identity | None:
        """The customer ``named`` (a configuration error unless another customer of the directory), or
        the first other customer of ``customer``'s tenant, else of any tenant; None when there is none."""
        if named is not None:
            other = self.customer(named)
            if other.subject == customer.subject:
                raise ConfigurationError(
                    FixtureErrorCode.FIXTURE_INVALID, f"other_customer {named!r} is the fixture's customer"
                )
            return other
        others = [
            person.identity()
            for person in self.directory.people
            if person.role is Role.CUSTOMER and person.subject != customer.subject
        ]
        same_tenant = [other for other in others if other.tenant == customer.tenant]
        return next(iter(same_tenant or others), None)

    def foreign_reviewer(self, tenant: str, named: str | None) -> tuple[Identity, str] | None:
        """The reviewer ``named`` (a configuration error unless a reviewer of another tenant than
        ``tenant`` whose current key the kit holds), or the first such reviewer of the directory, with
        that key's kid; None when there is none."""
        held = {
            person.subject: (person.identity(), person.kids[-1])
            for person in self.directory.people
            if person.role is Role.REVIEWER
            and person.tenant != tenant
            and person.kids
            and private_key_path(self.state_dir, person.kids[-1]).exists()
        }
        if named is None:
            return next(iter(held.values()), None)
        if named not in held:
            raise ConfigurationError(
                FixtureErrorCode.FIXTURE_INVALID,
                f"foreign_reviewer {named!r} is not a reviewer of another tenant than {tenant!r} whose key the kit "
                f"holds under {keys_dir(self.state_dir)}",
            )
        return held[named]
