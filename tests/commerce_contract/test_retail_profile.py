"""The kit's retail profile (``python -m commerce_contract --profile retail``, a real process) against the
retail tenant's server over stdio, on the small domain of tests/retail_server, and against copies of it
with one check patched away in its own process: each broken clause is named by the check that holds it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from commerce_server.db import make_engine
from contracts.action_policy import ActionKind
from contracts.retail import RETAIL_TENANT
from keystore import create_demo_directory, directory_location, load_directory
from keystore.directory_edit import set_action
from keystore.directory_file import write_directory
from retail_server.db import create_retail_schema
from retail_server.directory import enrol_retail
from retail_server.records import load_database
from tests.commerce_contract.test_conformance_kit import run_kit
from tests.retail_server.test_retail_service import _database

NO_CONFIRMATION_CHECK = """
import sys
from commerce_server.action_agreement import Agreed
from retail_server import __main__ as entry, service

service.agreement_of = lambda *_args, **_kwargs: Agreed(confirmation_jti=None, approvals=())
sys.exit(entry.main())
"""
"""The retail server with the agreement check taken out: it executes what nobody confirmed."""
NO_IDENTITY = """
import sys
from retail_server import __main__ as entry, service

def anyones(self, session, order_id):
    from retail_server import records
    row = session.get(service.RetailOrderRow, order_id)
    if row is None:
        raise service.error_from_code(service.CommerceErrorCode.ORDER_NOT_ACCESSIBLE, "Order not found")
    return records.read_order(session, order_id), (1, row.version)

service.RetailService._own_order = anyones
sys.exit(entry.main())
"""
"""The retail server answering for any customer's order."""


def retail_state(state: Path, *, deny: ActionKind | None = None) -> Path:
    """Keys, a directory enrolling the small domain's customers (without ``deny``'s rule), the database
    and the kit's fixture."""
    create_demo_directory(state)
    location = Path(directory_location(state, {}))
    directory = enrol_retail(load_directory(str(location)), [("ana_diaz_1", "Ana"), ("bo_chen_2", "Bo")])
    write_directory(location, set_action(directory, RETAIL_TENANT, deny, None) if deny else directory)
    engine = make_engine(f"sqlite:///{state / 'retail.db'}")
    create_retail_schema(engine)
    load_database(engine, _database())
    engine.dispose()
    fixture = {
        "customer": "ana_diaz_1",
        "pending_order": "#W0000001",
        "other_customers_order": "#W0000003",
        "other_customers_email": "bo@example.com",
    }
    (state / "fixture.json").write_text(json.dumps(fixture), encoding="utf-8")
    return state


def kit(state: Path, wrong: str | None = None) -> tuple[int, dict[str, str], str]:
    if wrong is not None:
        (state / "server.py").write_text(wrong, encoding="utf-8")
    entry = str(state / "server.py") if wrong is not None else "-m retail_server"
    server = f"{sys.executable} {entry} --state-dir {state} --customer ana_diaz_1 --case kit-case-1"
    done = run_kit(
        "--profile", "retail", "--stdio", server, "--state-dir", str(state), "--fixture", str(state / "fixture.json")
    )
    seen = dict((name, verdict) for verdict, name in re.findall(r"^(PASS|FAIL|SKIP) (\w+):", done.stdout, re.M))
    return done.returncode, seen, done.stdout + done.stderr


def test_the_retail_server_conforms(tmp_path: Path) -> None:
    status, seen, output = kit(retail_state(tmp_path / "state"))
    assert status == 0, output
    assert seen.pop("retail_default_deny") == "SKIP", "the directory allows every retail write"
    assert set(seen.values()) == {"PASS"} and len(seen) == 6, output
    assert "6 of 7 checks passed" in output and "conforms" in output


def test_default_deny_is_checked_where_the_tenant_denies_a_write(tmp_path: Path) -> None:
    status, seen, output = kit(retail_state(tmp_path / "state", deny=ActionKind.MODIFY_ORDER_ITEMS))
    assert status == 0, output
    assert seen["retail_default_deny"] == "PASS", output
    assert "modify_pending_order_items, which tenant 'retail' does not allow, refused action_not_allowed" in output


@pytest.mark.parametrize(
    ("wrong", "check"),
    [(NO_CONFIRMATION_CHECK, "retail_confirmation_required"), (NO_IDENTITY, "retail_identity_scoping")],
)
def test_a_server_missing_a_clause_is_named(tmp_path: Path, wrong: str, check: str) -> None:
    status, seen, output = kit(retail_state(tmp_path / "state"), wrong)
    assert status == 1, output
    assert seen[check] == "FAIL", output
