"""Add workflow histories of the current code to tests/histories/<release>/ for the replay test.

    .venv/bin/python scripts/record_histories.py --tag 2027-01 [--release v0.2]

Starts a throwaway Temporal dev server and an in-process worker (rehearsal model, fresh commerce
database), runs one case per scenario and writes each finished run's history as
``<release>/<scenario>-<tag>.json``. The release defaults to the newest one in tests/histories'
manifest (releases.json, then releases.d) whose commit is null (the current code); a release named by a
commit is past code and is refused. Histories are a contract with every case in flight: existing files are
never overwritten (the script refuses, exit 2), re-recorded or deleted; a new tag adds a new
generation next to the old ones, so CI replays every version of the workflow that may still have
cases running, each against its release's code.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

from history_scenarios import (
    ACTION_STACKS,
    CONVERSATION_SCENARIOS,
    PARTIAL,
    PASSKEY_SCENARIOS,
    SCENARIOS,
    UNVERIFIED,
    Action,
    allow_action,
    enrol_chen_passkey,
    hasten_idle_close,
)

from case_client import CaseClient
from contracts.case import CaseStatus
from contracts.knowledge import Language
from devstack.rehearsal_stack import RehearsalStack, rehearsal_stack
from devstack.release_manifest import release_entries
from keystore import demo_identity

HISTORIES = Path(__file__).resolve().parents[1] / "tests" / "histories"
REFUSED = 2
SUGGEST_CONTINUE_AS_NEW_AFTER_EVENTS = 150
"""The dev server suggests continue-as-new after this many history events (``limit.historyCount.
suggestContinueAsNew``), so the ``review_flood`` scenario records a case that continues as new under a
flood of malformed review signals without megabytes of payload; both of its runs are written."""


def refuse(message: str) -> SystemExit:
    """One line on stderr, exit 2."""
    print(f"record_histories: {message}", file=sys.stderr)
    return SystemExit(REFUSED)


def release_folder(release: str | None) -> Path:
    """The folder of ``release`` (default: the newest with commit null), refusing past or unknown releases."""
    manifest = release_entries(HISTORIES)
    current = [name for name, entry in manifest.items() if entry.commit is None]
    name = release or (current[-1] if current else None)
    if name is None or name not in manifest:
        raise refuse(f"release {name!r} is not in {HISTORIES}'s manifest (current code: {current or 'none'})")
    if name not in current:
        raise refuse(f"release {name} is commit {manifest[name].commit}, not the current code: record into {current}")
    return HISTORIES / name


async def record(
    stack: RehearsalStack, tag: str, out: Path, scenarios: list[tuple[str, str, str, Language, Action | None, int]]
) -> None:
    client, cases = stack.client, stack.cases  # cases start with an applicant token signed by the stack's issuer
    unsigned = CaseClient.for_client(client, task_queue=stack.task_queue)  # no issuer: no applicant token
    for name, applicant, question, language, action, ttl in scenarios:
        starter = unsigned if name == UNVERIFIED[0] else cases
        case = await starter.start(
            demo_identity(applicant),
            question,
            language=language,
            ttl_seconds=ttl,
            case_id=f"rec-{uuid.uuid4().hex[:8]}",
        )
        if action is not None:
            view = await case.settled(timeout=120, poll_seconds=0.2)
            if view.status not in (CaseStatus.WAITING_APPROVAL, CaseStatus.WAITING_CUSTOMER):
                raise SystemExit(f"{name}: the case ended {view.status.value} ({view.reason}) instead of waiting")
            await action(case, view, stack.signer)
        result = await case.ended(timeout=120)
        workflow_id = case.workflow.id
        runs = [execution.run_id async for execution in client.list_workflows(f'WorkflowId="{workflow_id}"')]
        for index, run_id in enumerate(reversed(runs), start=1):
            history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            suffix = f"-run{index}" if len(runs) > 1 else ""
            path = out / f"{name}{suffix}-{tag}.json"
            if path.exists():
                raise refuse(f"{path} exists: histories are never overwritten; choose another --tag")
            path.write_text(history.to_json(), encoding="utf-8")
            print(f"{path.name}: {result.status.value} ({result.reason}), {len(history.events)} events")


async def record_actions(root: Path, tag: str, out: Path, names: tuple[str, ...], limits: dict[str, str]) -> None:
    """Each of the :data:`ACTION_STACKS` ``names`` on a stack of its own, qinghe allowing its action."""
    for name in names:
        kind, reviewers, escalation, scenarios = ACTION_STACKS[name]
        async with rehearsal_stack(root / name, dynamic_config=limits) as stack:
            allow_action(stack.state_dir, kind, reviewers, escalation)
            await record(stack, tag, out, scenarios)


async def main(tag: str, out: Path, only: str | None = None) -> None:
    limits = {"limit.historyCount.suggestContinueAsNew": str(SUGGEST_CONTINUE_AS_NEW_AFTER_EVENTS)}
    if only is not None:
        with tempfile.TemporaryDirectory() as tmp:
            await record_actions(Path(tmp), tag, out, (only,), limits)
        return
    with tempfile.TemporaryDirectory() as tmp:
        async with rehearsal_stack(Path(tmp) / "main", dynamic_config=limits) as stack:
            await record(stack, tag, out, [*SCENARIOS, (*UNVERIFIED, Language.EN, None, 900)])
        async with rehearsal_stack(Path(tmp) / "conversations", dynamic_config=limits) as stack:
            hasten_idle_close(stack.state_dir, "south")
            await record(stack, tag, out, CONVERSATION_SCENARIOS)
        async with rehearsal_stack(Path(tmp) / "passkeys", dynamic_config=limits) as stack:
            enrol_chen_passkey(stack.state_dir)
            await record(stack, tag, out, PASSKEY_SCENARIOS)
        await record_actions(Path(tmp), tag, out, tuple(ACTION_STACKS), limits)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="a new generation name, e.g. 2027-01")
    parser.add_argument("--release", help="a release of tests/histories/releases.json (default: the current code's)")
    parser.add_argument("--only", choices=PARTIAL, help="record only these scenarios (a partial generation)")
    args = parser.parse_args()
    folder = release_folder(args.release)
    taken = sorted(path.name for path in folder.glob(f"*-{args.tag}.json"))
    if taken:
        raise refuse(
            f"{folder} already holds {len(taken)} history(ies) tagged {args.tag} ({taken[0]}): choose another --tag"
        )
    folder.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(args.tag, folder, args.only))
