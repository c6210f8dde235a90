"""Our commerce server with one check taken out, run as a real process over stdio:

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
from commerce_server import action_agreement, refunds
from contracts.actions import ActionExecution
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


def _without_confirmation_check() -> None:
    """Executes an action without the customer's confirmation, whatever the tenant's rule says."""

    def nobody_asked(*_args: Any, **_kwargs: Any) -> tuple[None, None]:
        return None, None

    action_agreement._confirmation = nobody_asked


def _without_expiry_check() -> None:
    """Executes an action whatever the time its agreements were signed."""

    def always_in_time(*_args: Any, **_kwargs: Any) -> None:
        return None

    action_agreement.in_time = always_in_time


def _answering_conflicts_as_replays() -> None:
    """Answers a request whose key was used with another body as a replay of the first (it compares the
    proposal only, not the body)."""

    def proposal_only(self: ActionExecution) -> str:
        return self.proposal_id

    ActionExecution.body_digest = proposal_only  # type: ignore[method-assign]


WRONG_SERVERS: dict[str, Callable[[], None]] = {
    "no-applicant-check": _without_applicant_check,
    "no-policy-check": _without_policy_check,
    "no-reviewer-tenant-check": _without_reviewer_tenant_check,
    "no-confirmation-check": _without_confirmation_check,
    "no-expiry-check": _without_expiry_check,
    "conflicts-as-replays": _answering_conflicts_as_replays,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in WRONG_SERVERS:
        print(f"wrong_server: name one of {', '.join(WRONG_SERVERS)} first", file=sys.stderr)
        return 2
    WRONG_SERVERS[argv[0]]()
    return entry.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
