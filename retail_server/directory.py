"""The ``retail`` tenant in the support directory: the domain's customers as its customers, and the
rules of its writes (data, as every tenant's policy is). Enrolled once, by ``python -m retail_server
enroll``; the server then reads who must agree, and whose confirmations count, from the directory."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.action_policy import ActionRule
from contracts.directory import Directory
from contracts.retail import RETAIL_TENANT, RetailWrite
from keystore.directory_edit import add_customers, add_tenant, set_action

CUSTOMER_CONFIRMS = ActionRule(customer_confirms=True, reviewers=0)
"""The retail policy's own rule for every write: "you must list the action details and obtain explicit
user confirmation (yes) to proceed" (policy.md), and no reviewer."""


def enrol_retail(
    directory: Directory, customers: Iterable[tuple[str, str]], rule: ActionRule = CUSTOMER_CONFIRMS
) -> Directory:
    """``directory`` with the ``retail`` tenant, each ``(user_id, display name)`` its customer, and ``rule``
    for the action kind of every retail write. Refused (DirectoryEditError) when the tenant is listed."""
    enrolled = add_customers(add_tenant(directory, RETAIL_TENANT, "Retail (τ²-bench)"), RETAIL_TENANT, customers)
    for kind in {write.action_kind for write in RetailWrite}:
        enrolled = set_action(enrolled, RETAIL_TENANT, kind, rule)
    return enrolled
