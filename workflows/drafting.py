"""Drafting an answer and having it reviewed independently (workflow code).

The model composes a draft; a draft that breaks the answer contract is refused by code and rewritten
once; a draft that passes goes to the independent review, whose problems feed the one rewrite. What
comes out is the answer the deliver gate then judges, or the stop that says why there is none.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.case import CaseStatus
    from contracts.case_input import CaseState
    from contracts.conversation import ProgressKind
    from contracts.model_io import ComposedAnswer, ReviewResult, Verdict
    from contracts.names import ActivityName, EventKind, StopCode
    from workflows import case_details, requests
    from workflows.model_calls import ModelCalls
    from workflows.outcomes import CaseStopped, ContractViolation


async def draft_and_review(
    s: CaseState,
    model: ModelCalls,
    record: Callable[[EventKind, str], None],
    announce: Callable[[ProgressKind], None] = lambda _: None,
) -> None:
    """Set ``s.answer`` to a draft the independent review passed, in at most two drafts, or stop;
    ``announce`` tells the customer's progress stream when a draft is written and when it is checked."""
    problems: list[str] = []
    previous: ComposedAnswer | None = None
    refused_draft: str | None = None
    for attempt in (1, 2):
        announce(ProgressKind.DRAFTING)
        try:
            summary = f"compose answer, draft {attempt}{case_details.finding_summary(s)}"
            candidate = await model.compose(previous, problems, summary=summary)
        except ContractViolation as violation:
            refused_draft = violation.code
            problems = [f"the draft violated the answer contract ({violation.code})"]
            continue
        refused_draft = None
        announce(ProgressKind.REVIEWING)
        request = requests.review_request(s, candidate)
        summary = f"independent review of draft {attempt}"
        reviewed = await model.call(ActivityName.REVIEW_ANSWER, request, ReviewResult, summary=summary)
        verdict = reviewed.verdict
        record(EventKind.REVIEWED, f"draft {attempt}: {verdict.verdict.value} {'; '.join(verdict.problems)}".strip())
        if verdict.verdict is Verdict.PASS:
            s.answer = candidate
            return
        if verdict.verdict is Verdict.INSUFFICIENT and attempt == 2:
            raise CaseStopped(CaseStatus.NEEDS_INPUT, StopCode.REVIEW_INSUFFICIENT_EVIDENCE)
        previous, problems = candidate, list(verdict.problems)
    if refused_draft is not None:
        raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.DRAFT_REFUSED, refused_draft)
    raise CaseStopped(CaseStatus.NEEDS_HUMAN, StopCode.REVIEW_FAILED_AFTER_REWRITE)
