"""A merchant's own policies: ``SUPPORT_KNOWLEDGE_DIR`` points the worker and the commerce server at a
knowledge directory where the second tenant, east, has its own returns terms (en and zh) and its own
refund rule, next to the packaged ones (the packaged ``refund_rules.json`` keeps serving qinghe).

East is added with ``starter.py directory`` without ``--policies``: it follows its own policies. Its
customer's refund is quoted by east's rule (14-day window, its own rule version), cites east's pages,
and the commerce server, which re-quotes before paying, reads the same directory and pays it.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.case import CaseStatus
from knowledge.check import check_knowledge
from knowledge.location import KNOWLEDGE_DIR_ENV, PACKAGED
from tests.e2e.merchant_world import ROOT, Merchant, running_merchant

EXAMPLE = ROOT / "docs" / "examples" / "east-knowledge"
EAST_ORDERS = ROOT / "docs" / "examples" / "east-orders.json"
EAST_PAGES = ["EAST_RETURNS:p01", "EAST_RETURNS:p02"]


@pytest.fixture
def knowledge_dir(tmp_path: Path) -> Path:
    """The packaged documents, skills and rule file, plus east's document and rule from the example."""
    root = tmp_path / "knowledge"
    shutil.copytree(PACKAGED.documents, root / "documents")
    shutil.copytree(PACKAGED.skills, root / "skills")
    shutil.copy(PACKAGED.rules_file, root / "refund_rules.json")
    shutil.copy(EXAMPLE / "documents" / "EAST_RETURNS.md", root / "documents")
    shutil.copytree(EXAMPLE / "refund_rules", root / "refund_rules")
    report = check_knowledge(root)
    assert report.problems == [] and report.rule_tenants == ["qinghe", "east"], report.problems
    return root


@pytest.fixture
async def east_shop(
    temporal_server,
    temporal_client: Client,
    tmp_path: Path,
    isolated_environment: None,
    knowledge_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Merchant]:
    monkeypatch.setenv(KNOWLEDGE_DIR_ENV, str(knowledge_dir))
    async with running_merchant(temporal_server, temporal_client, tmp_path / "merchant") as shop:
        for args in (
            ("directory", "add-tenant", "east", "--name", "East Shop (fictional)"),
            ("directory", "add-person", "ana", "--tenant", "east", "--role", "customer", "--name", "Ana"),
            ("directory", "add-person", "kai", "--tenant", "east", "--role", "reviewer", "--name", "Kai"),
        ):
            await asyncio.to_thread(shop.run, *args)
        imported = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "commerce_server", "import", str(EAST_ORDERS), "--state-dir", str(shop.state_dir)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert imported.returncode == 0, imported.stderr
        yield shop


async def test_easts_refund_is_quoted_by_easts_rule_and_cites_easts_pages(east_shop: Merchant) -> None:
    shop = east_shop
    view = await shop.ask("ana", "Please refund my order QH-4001, the return arrived at your warehouse.")

    assert view.status is CaseStatus.WAITING_APPROVAL, (view.status, view.reason)
    assert view.tenant == "east" and view.quote is not None and view.proposal is not None
    quote = view.quote
    assert (quote.rule_version, quote.window_days, quote.eligible, quote.amount_cents) == (
        "east-returns-2026-09",
        14,
        True,
        18900,
    )
    assert quote.citations == EAST_PAGES
    assert view.proposal.rule_version == "east-returns-2026-09" and view.proposal.amount_cents == 18900
    assert view.citations and all(c.rsplit(":", 2)[0] in EAST_PAGES for c in view.citations), view.citations

    approved = await shop.review("kai", view)  # the commerce server re-quotes with east's rule, then pays
    assert approved.returncode == 0, approved.stderr
    paid = await shop.view(view.case_id)
    assert paid.status is CaseStatus.COMPLETED and paid.receipt is not None, (paid.status, paid.reason)
    assert paid.receipt.amount_cents == 18900
