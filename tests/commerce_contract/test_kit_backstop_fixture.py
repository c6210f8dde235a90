"""What the kit's backstop checks take from the fixture and the directory, and how a check the fixture
cannot show is reported: named as not checked, never counted as passed, and no failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from commerce_contract.__main__ import parse_args, prepare
from commerce_contract.fixture import DEMO_FIXTURE, Fixture, KitKeys
from commerce_contract.runner import FAIL, PASS, SKIP, CheckResult, exit_status, summary
from contracts.errors import ConfigurationError
from keystore import create_demo_directory, private_key_path, reviewer_kid


@pytest.fixture
def keys(tmp_path: Path) -> KitKeys:
    create_demo_directory(tmp_path)
    return KitKeys.load(tmp_path)


def test_another_customer_is_of_the_same_tenant_unless_the_fixture_names_one(keys: KitKeys) -> None:
    alice = keys.customer("alice")

    assert keys.other_customer(alice, None) == keys.customer("bob")
    assert keys.other_customer(alice, "lin") == keys.customer("lin")
    with pytest.raises(ConfigurationError, match="is the fixture's customer"):
        keys.other_customer(alice, "alice")
    with pytest.raises(ConfigurationError, match="no customer 'chen'"):
        keys.other_customer(alice, "chen")


def test_a_foreign_reviewer_is_one_of_another_tenant_whose_key_the_kit_holds(keys: KitKeys) -> None:
    mei = keys.foreign_reviewer("qinghe", None)

    assert mei is not None and (mei[0].subject, mei[0].tenant, mei[1]) == ("mei", "south", reviewer_kid("mei"))
    assert keys.foreign_reviewer("qinghe", "mei") == mei
    with pytest.raises(ConfigurationError, match="foreign_reviewer 'chen' is not a reviewer of another tenant"):
        keys.foreign_reviewer("qinghe", "chen")
    private_key_path(keys.state_dir, reviewer_kid("mei")).unlink()
    assert keys.foreign_reviewer("qinghe", None) is None


def test_the_fixture_names_the_backstop_material_optionally() -> None:
    assert (DEMO_FIXTURE.other_customer, DEMO_FIXTURE.foreign_reviewer, DEMO_FIXTURE.four_eyes_order) == (
        None,
        None,
        None,
    )
    named = Fixture.model_validate(
        {
            "customer": "alice",
            "refundable_orders": ["QH-1001"],
            "foreign_order": "QH-2001",
            "four_eyes_order": "QH-1002",
        }
    )
    assert named.four_eyes_order == "QH-1002"


def test_a_fixture_naming_material_the_directory_lacks_is_refused_before_any_call(
    keys: KitKeys, tmp_path: Path
) -> None:
    fixture = tmp_path / "fixture.json"
    base = {"customer": "alice", "refundable_orders": ["QH-1001"], "foreign_order": "QH-2001"}
    arguments = parse_args(["--stdio", "unused", "--state-dir", str(keys.state_dir), "--fixture", str(fixture)])

    fixture.write_text(json.dumps(base | {"foreign_reviewer": "chen"}), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="foreign_reviewer 'chen'"):
        prepare(arguments)
    fixture.write_text(json.dumps(base | {"other_customer": "nobody"}), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="no customer 'nobody'"):
        prepare(arguments)
    fixture.write_text(json.dumps(base | {"other_customer": "lin", "foreign_reviewer": "mei"}), encoding="utf-8")
    assert prepare(arguments)[0].foreign_reviewer == "mei"


def test_a_check_not_run_is_named_and_is_no_failure_but_a_failure_still_fails() -> None:
    passed = CheckResult("tool_list", PASS, "ok")
    skipped = CheckResult("approval_policy_not_met", SKIP, "not checked: no four-eyes policy")
    failed = CheckResult("approval_reviewer_of_another_tenant", FAIL, "PAID the approval")

    assert skipped.line() == "SKIP approval_policy_not_met: not checked: no four-eyes policy"
    assert not skipped.passed and not skipped.failed
    assert summary([passed, skipped], "T") == (
        "conformance: 1 of 2 checks passed against T; conforms; "
        "not checked (the fixture cannot show them): approval_policy_not_met"
    )
    assert exit_status([passed, skipped]) == 0
    assert summary([passed, failed], "T") == (
        "conformance: 1 of 2 checks passed against T; failed: approval_reviewer_of_another_tenant"
    )
    assert exit_status([passed, skipped, failed]) == 1
