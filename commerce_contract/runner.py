"""Run every check in order, report one line each, and a summary.

A check that raises anything (a refusal it did not expect, a lost connection, a bug in the server's
answer) fails with that one line; the next check still runs, so one run names every broken clause. A
check that the fixture gives nothing to run with is not checked (``SKIP``): never counted as passed,
and named in the summary.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from commerce_contract.checks_account import account_checks
from commerce_contract.checks_actions import action_checks
from commerce_contract.checks_closure import closure_checks
from commerce_contract.checks_reads import error_classes, identity_scoping, tool_list
from commerce_contract.checks_refund_action import refund_action_checks
from commerce_contract.checks_refunds import Check, refund_checks
from commerce_contract.checks_returns import return_checks
from commerce_contract.context import CheckFailed, CheckSkipped
from contracts.errors import SupportError, bounded

_Run = TypeVar("_Run")

PASS = "PASS"
FAIL = "FAIL"
SKIP = "SKIP"
"""Not checked: the fixture and the directory gave the check nothing to run with."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    verdict: str
    """:data:`PASS`, :data:`FAIL` or :data:`SKIP`."""
    reason: str

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    @property
    def failed(self) -> bool:
        return self.verdict == FAIL

    def line(self) -> str:
        return f"{self.verdict} {self.name}: {self.reason}"


def all_checks() -> list[Check]:
    """Every check, in the order it runs (the refund checks build on each other)."""
    return [
        tool_list,
        error_classes,
        identity_scoping,
        *refund_checks(),
        *action_checks(before_execution=closure_checks()),
        *return_checks(),
        *account_checks(),
        *refund_action_checks(),
    ]


def check_names() -> list[str]:
    return [check.__name__ for check in all_checks()]


async def run_checks(
    run: _Run, checks: Sequence[Callable[[_Run], Awaitable[str]]], report: Callable[[CheckResult], None]
) -> list[CheckResult]:
    """Each of ``checks`` (a profile's: :func:`all_checks` for the commerce one) on ``run``, reported as it ends."""
    results: list[CheckResult] = []
    for check in checks:
        try:
            result = CheckResult(check.__name__, PASS, await check(run))
        except CheckSkipped as skipped:
            result = CheckResult(check.__name__, SKIP, f"not checked: {skipped}")
        except CheckFailed as failed:
            result = CheckResult(check.__name__, FAIL, str(failed))
        except SupportError as error:
            result = CheckResult(check.__name__, FAIL, f"{error.code}: {error.message}")
        except Exception as error:  # whatever the server's answers make the kit trip over is that check's failure
            result = CheckResult(check.__name__, FAIL, f"unexpected {type(error).__name__}: {error}")
        result = CheckResult(result.name, result.verdict, bounded(result.reason, 400))
        report(result)
        results.append(result)
    return results


def summary(results: list[CheckResult], target: str) -> str:
    """One line: how many checks passed, and either ``conforms`` or the failed checks by name; checks not
    run are named too, so a run that skipped one never reads as a full pass."""
    passed = sum(result.passed for result in results)
    failed = [result.name for result in results if result.failed]
    skipped = [result.name for result in results if result.verdict == SKIP]
    tail = "conforms" if not failed else f"failed: {', '.join(failed)}"
    if skipped:
        tail += f"; not checked (the fixture cannot show them): {', '.join(skipped)}"
    return f"conformance: {passed} of {len(results)} checks passed against {target}; {tail}"


def exit_status(results: list[CheckResult]) -> int:
    """0 when no check failed (a check not run is named in the summary, not a failure), else 1."""
    return 1 if any(result.failed for result in results) else 0
