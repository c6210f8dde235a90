"""Our commerce server with one backstop check taken out, run as a real process over stdio:

    python -m tests.commerce_contract.wrong_server WHICH --profile alice --state-dir DIR

``WHICH`` names the check removed (:data:`WRONG_SERVERS`); the rest of the arguments are
``python -m commerce_server``'s. The server's code is untouched: the check is patched away in this
process before ``commerce_server``'s normal main runs, so every other check stays exactly ours.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from commerce_server import __main__ as entry
from commerce_server import refunds
from contracts.approval_verification import ApprovalTerms, SignedApproval, VerifiedApproval
from contracts.credentials import ApprovalClaims
from contracts.directory import Directory


def _without_applicant_check() -> None:
    """Pays whatever applicant token an approval carries, or none."""

    def trusting(self: refunds.RefundSettlement, approval: Any) -> None:
        return None

    refunds.RefundSettlement._check_applicant = trusting  # type: ignore[method-assign]


def _without_policy_check() -> None:
    """Pays on the first approval alone, whatever the tenant's approval policy needs."""

    def none_needed(*_args: Any, **_kwargs: Any) -> list[ApprovalClaims]:
        return []

    refunds.co_approvals = none_needed


def _without_reviewer_tenant_check() -> None:
    """Checks every approval rule but that the reviewer belongs to the applicant's tenant."""
    checked = refunds.approval_meets

    def any_tenant(
        signed: SignedApproval, terms: ApprovalTerms, directory: Directory, **rules: Any
    ) -> VerifiedApproval:
        applicant = terms.applicant.model_copy(update={"tenant": signed.claims.tenant})
        return checked(signed, replace(terms, applicant=applicant), directory, **rules)

    refunds.approval_meets = any_tenant


WRONG_SERVERS: dict[str, Callable[[], None]] = {
    "no-applicant-check": _without_applicant_check,
    "no-policy-check": _without_policy_check,
    "no-reviewer-tenant-check": _without_reviewer_tenant_check,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in WRONG_SERVERS:
        print(f"wrong_server: name one of {', '.join(WRONG_SERVERS)} first", file=sys.stderr)
        return 2
    WRONG_SERVERS[argv[0]]()
    return entry.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
