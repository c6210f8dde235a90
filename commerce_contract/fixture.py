"""What the kit needs to know about the target server's data, and the keys it signs with.

The fixture names a customer, their refundable orders (the kit pays the first that the published rule
still quotes as eligible, so a second run pays the next one), another customer's order and an order id
that does not exist. The default is the demo data of ``commerce_server/fixtures/commerce.json``.

The keys are the ones the target server was configured with: the directory it checks approvals and
bearer tokens with, the issuer's private key (applicant tokens) and the tenant's reviewers' private
keys (approval tokens), in ``<state dir>/keys`` as ``starter.py init`` writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.commerce import ORDER_ID_FORMAT
from contracts.directory import Directory
from contracts.errors import ConfigurationError
from contracts.identity import Identity, Role
from keystore import keys_dir, load_directory, private_key_path
from keystore.directory_file import DIRECTORY_FILE, first_problem
from keystore.signers import KeyFileSigner


class Fixture(BaseModel):
    """The target server's records the kit reads and pays."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    customer: str = Field(min_length=1, max_length=100)
    """The customer the kit acts for (over stdio, the one the server command is started for)."""
    refundable_orders: list[str] = Field(min_length=1)
    """The customer's refundable orders; each run pays the first the rule still quotes as eligible."""
    foreign_order: str = Field(pattern=ORDER_ID_FORMAT)
    """Another customer's order: it must read exactly like a missing one."""
    missing_order: str = Field(default="QH-9999", pattern=ORDER_ID_FORMAT)
    """An order id no one has."""
    unknown_sku: str = Field(default="ZZZZ-99")
    """A SKU of no product."""


DEMO_FIXTURE = Fixture(
    customer="alice",
    refundable_orders=["QH-1001", "QH-1002", "QH-1009"],
    foreign_order="QH-2001",
)
"""The seeded demo data (``commerce_server/fixtures/commerce.json``): alice's three refundable orders,
so three runs pass on one database before the kit has nothing left to pay."""


def load_fixture(path: Path | None) -> Fixture:
    """The fixture file at ``path`` (JSON), or the demo fixture; a bad file is a configuration error."""
    if path is None:
        return DEMO_FIXTURE
    try:
        return Fixture.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise ConfigurationError("fixture_unreadable", f"cannot read the fixture {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ConfigurationError("fixture_invalid", f"the fixture {path} is not JSON ({error.msg})") from None
    except ValidationError as error:
        raise ConfigurationError("fixture_invalid", f"the fixture {path} is invalid: {first_problem(error)}") from None


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
            raise ConfigurationError("fixture_customer_unknown", f"the directory lists no customer {subject!r}")
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
                "reviewer_keys_missing",
                f"the kit needs {count} reviewer key(s) of tenant {tenant!r} under {keys_dir(self.state_dir)}; "
                f"it holds {len(held)}",
            )
        return held[:count]
