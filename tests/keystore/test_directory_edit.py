"""Edits of the support directory: each returns a new, valid directory or refuses in one sentence, and a
refused edit leaves the directory it was given as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from contracts.directory import Directory
from contracts.identity import Role
from devstack.software_authenticator import SoftwareAuthenticator
from keystore import create_demo_directory, directory_location, load_directory, public_jwk
from keystore.directory_edit import (
    DirectoryEditError,
    add_passkey,
    add_person,
    add_tenant,
    keyed_person,
    remove_person,
    rotate_key,
    set_policy,
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Directory:
    state_dir: Path = tmp_path_factory.mktemp("state")
    create_demo_directory(state_dir)
    return load_directory(directory_location(state_dir, {}))


def _jwk(kid: str) -> dict[str, Any]:
    return public_jwk(Ed25519PrivateKey.generate(), kid)


def _kids(directory: Directory, subject: str) -> list[str]:
    person = directory.person(subject)
    assert person is not None, subject
    return person.kids


def _name(directory: Directory, tenant: str) -> str:
    entry = directory.tenant(tenant)
    assert entry is not None, tenant
    return entry.display_name


def test_add_tenant_then_people_of_it(demo: Directory) -> None:
    east = add_tenant(demo, "east", "East Shop (fictional)")
    assert _name(east, "east") == "East Shop (fictional)"
    assert demo.tenant("east") is None
    with_ana = add_person(east, "ana", "east", Role.CUSTOMER, "Ana")
    with_kai = add_person(with_ana, "kai", "east", Role.REVIEWER, "Kai", _jwk("reviewer:kai"))
    assert _kids(with_kai, "ana") == []
    assert _kids(with_kai, "kai") == ["reviewer:kai"]
    assert with_kai.key("reviewer:kai") is not None
    assert [person.subject for person in with_kai.reviewers("east")] == ["kai"]


def test_a_tenant_without_a_name_is_named_by_its_id(demo: Directory) -> None:
    assert _name(add_tenant(demo, "east"), "east") == "east"


@pytest.mark.parametrize(
    ("subject", "tenant", "message"),
    [
        ("ana", "nowhere", "unknown tenant 'nowhere'"),
        ("alice", "qinghe", "'alice' is already in the directory (tenant qinghe)"),
        ("alice", "south", "'alice' is already in the directory (tenant qinghe)"),
    ],
)
def test_add_person_refusals(demo: Directory, subject: str, tenant: str, message: str) -> None:
    with pytest.raises(DirectoryEditError) as refused:
        add_person(demo, subject, tenant, Role.CUSTOMER, "Someone")
    assert str(refused.value) == message


def test_duplicate_tenant_and_bad_names_are_refused(demo: Directory) -> None:
    with pytest.raises(DirectoryEditError, match="tenant 'south' is already in the directory"):
        add_tenant(demo, "south")
    with pytest.raises(DirectoryEditError, match=r"^tenants\.2\.tenant: String should match pattern"):
        add_tenant(demo, "East Shop")
    with pytest.raises(DirectoryEditError, match=r"^people\.5\.subject: String should match pattern"):
        add_person(demo, "../kai", "south", Role.CUSTOMER, "Kai")


def test_a_customer_holds_no_key_and_a_kid_is_held_once(demo: Directory) -> None:
    with pytest.raises(DirectoryEditError, match="customer and holds no key"):
        add_person(demo, "ana", "south", Role.CUSTOMER, "Ana", _jwk("reviewer:ana"))
    with pytest.raises(DirectoryEditError, match="'reviewer:chen' is listed twice"):
        add_person(demo, "kai", "south", Role.REVIEWER, "Kai", _jwk("reviewer:chen"))
    private = {**_jwk("reviewer:kai"), "d": "secret"}
    with pytest.raises(DirectoryEditError, match="is a private key"):
        add_person(demo, "kai", "south", Role.REVIEWER, "Kai", private)


def test_set_policy_sets_and_clears_the_threshold(demo: Directory) -> None:
    four_eyes = set_policy(demo, "south", 10_000)
    assert four_eyes.approvals_required("south", 10_000) == 2
    assert four_eyes.approvals_required("south", 9_999) == 1
    assert four_eyes.tenant("qinghe") == demo.tenant("qinghe")
    cleared = set_policy(four_eyes, "south", None)
    assert cleared.approvals_required("south", 10_000_000) == 1
    with pytest.raises(DirectoryEditError, match="unknown tenant 'east'"):
        set_policy(demo, "east", 100)
    with pytest.raises(DirectoryEditError, match="greater than or equal to 1"):
        set_policy(demo, "south", 0)


def test_rotate_key_replaces_every_kid_and_drops_the_old_keys(demo: Directory) -> None:
    rotated = rotate_key(demo, "chen", _jwk("reviewer:chen:2"))
    assert _kids(rotated, "chen") == ["reviewer:chen:2"]
    assert rotated.key("reviewer:chen") is None and rotated.key("reviewer:chen:2") is not None
    assert rotated.owner_of("reviewer:chen") is None
    assert demo.key("reviewer:chen") is not None
    again = rotate_key(rotated, "chen", _jwk("reviewer:chen:3"))
    assert [entry["kid"] for entry in again.keys if str(entry["kid"]).startswith("reviewer:chen")] == [
        "reviewer:chen:3"
    ]


def test_rotate_key_refusals(demo: Directory) -> None:
    with pytest.raises(DirectoryEditError, match="'alice' holds no key to rotate"):
        rotate_key(demo, "alice", _jwk("reviewer:alice"))
    with pytest.raises(DirectoryEditError, match="'nobody' is not in the directory"):
        keyed_person(demo, "nobody")
    with pytest.raises(DirectoryEditError, match="already holds key 'reviewer:chen'"):
        rotate_key(demo, "chen", _jwk("reviewer:chen"))
    with pytest.raises(DirectoryEditError, match="key 'reviewer:mei' is listed twice"):
        rotate_key(demo, "chen", _jwk("reviewer:mei"))


def test_remove_person_removes_their_keys(demo: Directory) -> None:
    without = remove_person(demo, "mei")
    assert without.person("mei") is None and without.key("reviewer:mei") is None
    assert without.reviewers("south") == [] and without.key("reviewer:chen") is not None
    assert remove_person(without, "lin").person("lin") is None
    with pytest.raises(DirectoryEditError, match="'mei' is not in the directory"):
        remove_person(without, "mei")


def test_a_reviewer_gains_a_passkey_and_a_customer_or_a_second_holder_is_refused(demo: Directory) -> None:
    passkey = SoftwareAuthenticator("localhost", "http://localhost:8090").passkey_record()
    edited = add_passkey(demo, "chen", passkey)
    holder = edited.passkey_holder(passkey.credential_id)
    assert holder is not None and holder[0].subject == "chen" and demo.passkey_holder(passkey.credential_id) is None
    with pytest.raises(DirectoryEditError, match="only reviewers hold passkeys"):
        add_passkey(demo, "alice", passkey)
    with pytest.raises(DirectoryEditError, match=passkey.credential_id[:20]):
        add_passkey(edited, "mei", passkey)  # one credential, two people
