"""Run every check in order, report one line each, and a summary.

A check that raises anything (a refusal it did not expect, a lost connection, a bug in the server's
answer) fails with that one line; the next check still runs, so one run names every broken clause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from commerce_contract.checks_reads import error_classes, identity_scoping, tool_list
from commerce_contract.checks_refunds import Check, refund_checks
from commerce_contract.context import CheckFailed, Run
from contracts.errors import SupportError, bounded


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    reason: str

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.reason}"


def all_checks() -> list[Check]:
    """Every check, in the order it runs (the refund checks build on each other)."""
    return [tool_list, error_classes, identity_scoping, *refund_checks()]


def check_names() -> list[str]:
    return [check.__name__ for check in all_checks()]


async def run_checks(run: Run, report: Callable[[CheckResult], None]) -> list[CheckResult]:
    results: list[CheckResult] = []
    for check in all_checks():
        try:
            result = CheckResult(check.__name__, True, await check(run))
        except CheckFailed as failed:
            result = CheckResult(check.__name__, False, str(failed))
        except SupportError as error:
            result = CheckResult(check.__name__, False, f"{error.code}: {error.message}")
        except Exception as error:  # whatever the server's answers make the kit trip over is that check's failure
            result = CheckResult(check.__name__, False, f"unexpected {type(error).__name__}: {error}")
        result = CheckResult(result.name, result.passed, bounded(result.reason, 400))
        report(result)
        results.append(result)
    return results


def summary(results: list[CheckResult], target: str) -> str:
    passed = sum(result.passed for result in results)
    failed = [result.name for result in results if not result.passed]
    tail = "conforms" if not failed else f"failed: {', '.join(failed)}"
    return f"conformance: {passed} of {len(results)} checks passed against {target}; {tail}"
