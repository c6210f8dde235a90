"""How a case ends early, and what a failed activity means for it (pure, deterministic).

``CaseStopped`` carries a terminal status and a stop reason (``code`` or ``code:detail``, see
:mod:`contracts.names`) to the top of the workflow's ``run``. A failed activity arrives decoded by
:func:`contracts.errors.decode_activity_failure` as the typed error it was raised as (the counterpart
of the encoder every activity's failure passes through); only transient failures were retried, so by
now its retries are spent.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.case import CaseStatus
from contracts.errors import AuthorizationError, BusinessError, ConfigurationError, ContractError, SupportError
from contracts.names import StopCode, stop_reason


@dataclass(frozen=True)
class Outcome:
    status: CaseStatus
    code: StopCode
    detail: str | None = None


class CaseStopped(Exception):
    """Raised inside the workflow to end the case in a terminal status (never leaves the workflow)."""

    def __init__(self, status: CaseStatus, code: StopCode, detail: str | None = None) -> None:
        self.status = status
        self.reason = stop_reason(code, detail)
        super().__init__(self.reason)

    @classmethod
    def after(cls, outcome: Outcome) -> CaseStopped:
        return cls(outcome.status, outcome.code, outcome.detail)


class ContractViolation(Exception):
    """A draft that broke the answer contract: the workflow may ask for one rewrite."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def model_failure(failure: SupportError) -> Outcome:
    """A model request that failed for good: misconfiguration fails the case, anything else hands it over."""
    match failure:
        case ConfigurationError():
            return Outcome(CaseStatus.FAILED, StopCode.MODEL_CONFIGURATION, str(failure))
        case ContractError():
            return Outcome(CaseStatus.NEEDS_HUMAN, StopCode.MODEL_CONTRACT, failure.code)
        case _:
            return Outcome(CaseStatus.NEEDS_HUMAN, StopCode.MODEL_UNAVAILABLE, failure.code)


def settlement_failure(failure: SupportError) -> Outcome:
    """A settlement that failed: refused (nothing paid), misconfigured, or unknown (a human reconciles).

    A configuration error was refused before the commerce server ran the tool (e.g. its token), so
    nothing was paid. Anything else (retries exhausted, a malformed receipt) leaves the outcome
    unknown; a retry with the same approval id would return the original receipt.
    """
    if isinstance(failure, ConfigurationError):
        return Outcome(CaseStatus.FAILED, StopCode.SETTLEMENT_CONFIGURATION, str(failure))
    if isinstance(failure, (BusinessError, AuthorizationError)):
        return Outcome(CaseStatus.NEEDS_HUMAN, StopCode.SETTLEMENT_REFUSED, failure.code)
    return Outcome(CaseStatus.NEEDS_HUMAN, StopCode.SETTLEMENT_UNCONFIRMED, failure.code)
