"""Each tenant's terms for the actions (knowledge/action_terms.json): the packaged terms name only active
pages of the tenant's own documents; a merchant's file naming a missing page or another tenant's is one
problem on its line; the rules cite the pages of the terms the order's or account's tenant follows, and a
tenant whose terms name none for an action does not offer it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contracts.action_policy import ActionKind
from contracts.actions import ActionRequest, Address, CustomerAccount
from contracts.errors import BusinessError
from knowledge.action_rules import MERCHANT_STAFF_ONLY, AccountRecords, OrderRecords, action_effect
from knowledge.action_terms import load_action_terms
from knowledge.check import check_knowledge
from knowledge.location import PACKAGED
from tests.case_data import ORDERS

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "east-knowledge"
KINDS = ("cancel_order", "change_order_address")
HOME = Address(
    recipient="Lin (fictional)", phone="+86 20 5555 0103", line1="1 Road", city="X", postcode="510000", country="CN"
)


def test_the_packaged_terms_give_each_tenant_its_own_pages() -> None:
    terms = load_action_terms(PACKAGED)

    assert terms.pages("qinghe", ActionKind.CANCEL_ORDER) == ("DELIVERY:p01", "INVOICES:p02")
    assert terms.pages("south", ActionKind.CANCEL_ORDER) == ("SOUTH_TERMS:p03",)
    assert terms.pages("south", ActionKind.EXCHANGE_ITEMS) == ()
    assert check_knowledge(PACKAGED.root).problems == []


def test_a_page_that_is_missing_or_another_tenants_is_a_problem_on_its_line(tmp_path: Path) -> None:
    root = tmp_path / "knowledge"
    shutil.copytree(EXAMPLE, root)
    terms = {
        "tenants": {
            "east": {"cancel_order": ["EAST_RETURNS:p09"]},
            "west": {"change_order_address": ["EAST_RETURNS:p01"]},
        }
    }
    (root / "action_terms.json").write_text(json.dumps(terms, indent=2), encoding="utf-8")

    lines = (root / "action_terms.json").read_text(encoding="utf-8").splitlines()
    cancel, address = (next(n for n, line in enumerate(lines, 1) if f'"{kind}"' in line) for kind in KINDS)

    problems = [str(problem) for problem in check_knowledge(root).problems]

    assert problems == [
        f"{root / 'action_terms.json'}:{cancel}: east cancel_order: 'EAST_RETURNS:p09' is no page of any document",
        f"{root / 'action_terms.json'}:{address}: west change_order_address: EAST_RETURNS:p01 is a page of tenant "
        "'east', not of 'west'",
    ]


def test_each_tenants_cancellation_cites_its_own_terms() -> None:
    cancel = ActionRequest(kind=ActionKind.CANCEL_ORDER, case_id="case-1", order_id="QH-3006")
    lins = action_effect(cancel, OrderRecords(order=ORDERS["QH-3006"]))
    alices = action_effect(cancel.model_copy(update={"order_id": "QH-1006"}), OrderRecords(order=ORDERS["QH-1006"]))

    assert lins.policy_pages == ("SOUTH_TERMS:p03",)
    assert alices.policy_pages == ("DELIVERY:p01", "INVOICES:p02")
    with pytest.raises(BusinessError, match=r"\(SOUTH_TERMS p03\); this one is shipped"):
        action_effect(cancel.model_copy(update={"order_id": "QH-3005"}), OrderRecords(order=ORDERS["QH-3005"]))


def test_a_tenant_whose_terms_name_no_page_for_an_action_does_not_offer_it() -> None:
    account = CustomerAccount(tenant="east", customer="erin", default_address=HOME, currency="CNY", version=1)
    request = ActionRequest(
        kind=ActionKind.CHANGE_DEFAULT_ADDRESS, case_id="case-1", address=HOME.model_copy(update={"city": "Y"})
    )

    with pytest.raises(BusinessError) as refused:
        action_effect(request, AccountRecords(account))

    assert (refused.value.code, refused.value.message) == ("action_not_eligible", MERCHANT_STAFF_ONLY)
    followed = action_effect(request, AccountRecords(account, policy_tenant="south"))
    assert followed.policy_pages == ("SOUTH_TERMS:p03",)
