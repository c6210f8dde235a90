"""Replay committed histories of real runs, each against its own release's code (tests/histories/).

Release 0.1's histories replay against 0.1's code extracted from git history (tests/release_code.py)
through scripts/replay_histories.py; the current release's replay in-process. Any non-deterministic
change to a release's workflow fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from case_history.trail import recorded_workflow_id
from contracts.payload_codec import CASE_DATA_CONVERTER, ENCODING
from devstack.release_manifest import ADDED_RELEASES_DIR
from tests.release_code import HISTORIES as HISTORIES_ROOT
from tests.release_code import MANIFEST, SHA, current_release, extracted, releases, replay_in
from workflows.action_gate import REFUND_AS_ACTION_PATCH
from workflows.action_steps import CLOSE_ACTION_PATCH
from workflows.escalation import NEAR_EXPIRY_PATCH, NEAR_EXPIRY_TIMER_SUMMARY
from workflows.sandbox import workflow_runner
from workflows.support_case import SupportCaseWorkflow

RELEASE_0_1 = releases()["v0.1"]
HISTORIES = RELEASE_0_1.histories()
CURRENT = current_release()
CURRENT_HISTORIES = CURRENT.histories()
REQUIRED = {"approved_refund", "rejected_refund", "expired_refund", "answered_delivery", "needs_human_uncovered"}
REQUIRED_SINCE_ISSUE_7 = {
    f"{name}-2026-12-issue7"
    for name in (
        *REQUIRED,
        "refused_then_approved",  # a malformed signal and a refused update are recorded; the update fails
        "zh_order_beside_chinese",  # 请退款QH-2002并给出依据 names the order
        "review_flood-run1",  # the waiting case continues as new under a flood of malformed reviews
        "review_flood-run2",  # ...and the next run settles with the carried proposal
    )
}
REQUIRED_SINCE_ISSUE_9 = {
    f"{name}-2026-12-issue9"
    for name in (
        *(name.removesuffix("-2026-12-issue7") for name in REQUIRED_SINCE_ISSUE_7),
        "forged_then_approved",  # a forged signature and another tenant's approval refused, chen's signed one pays
        "applicant_unverified",  # no applicant token: nothing is read, the case fails with the reason
    )
}


REQUIRED_SINCE_ISSUE_10 = {name.replace("-2026-12-issue9", "-2026-12-issue10") for name in REQUIRED_SINCE_ISSUE_9}
"""Recorded with the case's metadata: step summaries, current details, the proposal and receipt in the memo."""

REQUIRED_SINCE_ISSUE_12 = {"deployed_while_waiting-2026-12-issue12"}
"""A refund that waited on the code before the ``case-metadata`` patch and settled on a later worker
(tests/deploy_upgrade): one history with both versions in it."""

REQUIRED_SINCE_ISSUE_13 = {name.replace("-2026-12-issue10", "-2026-12-issue13") for name in REQUIRED_SINCE_ISSUE_10}
"""Recorded with the short steps as local activities (``short-steps-local``) and the case payload codec:
the applicant check and the tools are markers, and payloads of 4 KiB and more are compressed."""


REQUIRED_IN_0_2 = {
    "approved_refund",
    "rejected_refund",
    "expired_refund",
    "answered_delivery",
    "needs_human_uncovered",
    "needs_input_foreign_order",
    "refused_then_approved",
    "zh_order_beside_chinese",
    "review_flood-run1",
    "review_flood-run2",
    "forged_then_approved",
    "applicant_unverified",
}
"""What scripts/record_histories.py records (its SCENARIOS and UNVERIFIED, the flood's two runs): one
generation of each release after 0.1, ``<name>-<tag>.json``, holds every one."""
REQUIRED_IN_0_11 = (REQUIRED_IN_0_2 - {"needs_input_foreign_order"}) | {
    "foreign_order_then_withdrawn",
    "conversation_asks_then_approved",
    "conversation_withdrawn",
    "conversation_many_messages-run1",
    "conversation_many_messages-run2",
    "conversation_idle_closed",
}
"""From 0.11 a case is a conversation: a foreign order's case waits for its customer (who withdraws), and
the conversation shapes are recorded beside the rest."""


REQUIRED_IN_0_12 = REQUIRED_IN_0_11 | {
    "action_not_allowed",
    "action_cancel_confirmed",
    "action_cancel_approved",
    "action_cancel_expired",
}
"""From 0.12 a case proposes an action: a cancellation the customer alone confirms, one a reviewer also
approves, one that expires unconfirmed, and one the tenant's policy does not allow."""


def required_in(release: str) -> set[str]:
    major, minor = (int(part) for part in release.removeprefix("v").split("."))
    if (major, minor) >= (0, 12):
        return REQUIRED_IN_0_12
    return REQUIRED_IN_0_11 if (major, minor) >= (0, 11) else REQUIRED_IN_0_2


GENERATION_RELEASES = [release.name for release in releases().values() if release.name != "v0.1"]


def test_release_0_1_histories_of_every_outcome_are_committed() -> None:
    """Every 0.1 generation is committed: the first (before any patch), the one with the first patches, the
    one with signed credentials, the one with the case's metadata, a case deployed across versions while
    it waited, and the one with local short steps and compressed payloads."""
    expected = (
        REQUIRED
        | REQUIRED_SINCE_ISSUE_7
        | REQUIRED_SINCE_ISSUE_9
        | REQUIRED_SINCE_ISSUE_10
        | REQUIRED_SINCE_ISSUE_12
        | REQUIRED_SINCE_ISSUE_13
    )
    assert {path.stem for path in HISTORIES} >= expected


@pytest.mark.parametrize("name", GENERATION_RELEASES)
def test_each_release_after_0_1_has_a_history_of_every_outcome(name: str) -> None:
    """One tag of the release's folder holds a history of every outcome the recording script records (fails
    until ``scripts/record_histories.py --release NAME --tag T`` has added that generation)."""
    stems = {path.stem for path in releases()[name].histories()}
    tags = {stem.removeprefix("approved_refund-") for stem in stems if stem.startswith("approved_refund-")}
    required = required_in(name)
    complete = [tag for tag in sorted(tags) if {f"{outcome}-{tag}" for outcome in required} <= stems]
    missing = sorted(required - {stem.rsplit("-", 1)[0] for stem in stems})
    assert complete, f"tests/histories/{name} has no complete generation (tags {sorted(tags)}; missing {missing})"


def test_every_history_is_in_exactly_one_release_folder_of_the_manifest() -> None:
    """Beside the manifest (releases.json, releases.d) and README.md, every file lies directly in a folder the
    manifest names, and
    only histories and that folder's README.md; no history name is in two releases."""
    named = releases()
    assert all(release.folder.is_dir() for release in named.values()), sorted(named)
    misplaced: list[str] = []
    owners: dict[str, list[str]] = {}
    for path in sorted(p for p in HISTORIES_ROOT.rglob("*") if p.is_file()):
        relative = path.relative_to(HISTORIES_ROOT)
        if relative.parts in {(MANIFEST.name,), ("README.md",)} or relative.parts[0] == ADDED_RELEASES_DIR:
            continue
        if len(relative.parts) != 2 or relative.parts[0] not in named or not path.name.endswith((".json", "README.md")):
            misplaced.append(str(relative))
        elif path.suffix == ".json":
            owners.setdefault(path.name, []).append(relative.parts[0])
    assert not misplaced, f"not in a release folder named in {MANIFEST.name}: {misplaced}"
    assert {name: folders for name, folders in owners.items() if len(folders) > 1} == {}
    assert sum(len(release.histories()) for release in named.values()) == len(owners)


def test_the_manifest_names_each_release_by_commit_and_the_current_code_last() -> None:
    """Past releases by a 40-hex commit (0.1 tagged v0.1.0), the current code (commit null) after them."""
    named = list(releases().values())
    assert [release.name for release in named][:2] == ["v0.1", "v0.2"]
    assert all(release.commit is None or SHA.fullmatch(release.commit) for release in named)
    current = [release.commit is None for release in named]
    assert current == sorted(current) and current[-1] and named[-1] == CURRENT
    assert RELEASE_0_1.tag == "v0.1.0" and RELEASE_0_1.commit is not None


@pytest.fixture(scope="session")
def release_0_1_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Release 0.1's code (tests/histories/releases.json), extracted with ``git archive`` once per session."""
    return extracted(RELEASE_0_1, tmp_path_factory)


def test_release_0_1_histories_replay_against_release_0_1_code(release_0_1_code: Path) -> None:
    """Every 0.1 history replays with the workflow, codec and sandbox runner imported from 0.1's own tree."""
    done = replay_in(release_0_1_code, RELEASE_0_1.folder)
    assert done.returncode in (0, 1), f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"
    report = json.loads(done.stdout)
    assert all(Path(file).is_relative_to(release_0_1_code) for file in report["modules"].values()), report["modules"]
    failures = [f"{Path(r['file']).name}: {r['error']}" for r in report["results"] if not r["ok"]]
    assert not failures, f"{len(failures)} of {len(HISTORIES)} 0.1 histories fail on {RELEASE_0_1.commit}:\n" + (
        "\n".join(failures)
    )
    assert sorted(r["file"] for r in report["results"]) == sorted(map(str, HISTORIES))
    assert done.returncode == 0 and report["replayed"] == len(HISTORIES) > 0


PAST_RELEASES_AFTER_0_1 = [release.name for release in releases().values() if release.commit and release.name != "v0.1"]
"""Past releases replayed against a ``git archive`` of their own commit (0.1 has its own test above)."""


@pytest.mark.parametrize("name", PAST_RELEASES_AFTER_0_1)
def test_a_past_release_histories_replay_against_its_own_code(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every history of a past release replays with the workflow imported from that release's own tree
    (its tag's commit): the cases it started run on that code, not on the current one."""
    release = releases()[name]
    assert release.commit is not None
    code = extracted(release, tmp_path_factory)
    histories = release.histories()
    done = replay_in(code, release.folder)
    assert done.returncode in (0, 1), f"exit {done.returncode}: {done.stderr.strip()[-2000:]}"
    report = json.loads(done.stdout)
    assert all(Path(file).is_relative_to(code) for file in report["modules"].values()), report["modules"]
    failures = [f"{Path(r['file']).name}: {r['error']}" for r in report["results"] if not r["ok"]]
    assert not failures, f"{len(failures)} {name} histories fail on {release.commit}:\n" + "\n".join(failures)
    assert done.returncode == 0 and report["replayed"] == len(histories) > 0


def test_the_replay_refuses_code_from_another_tree_than_the_one_named(tmp_path: Path) -> None:
    """A tree without the code: the workflow comes from the venv's editable install, not from ``--tree``,
    and the runner says so in one line instead of replaying against the wrong code."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = replay_in(empty, HISTORIES[0])
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout[-500:])
    assert len(done.stderr.strip().splitlines()) == 1 and "refused" in done.stderr, done.stderr


def test_the_metadata_generation_replays_the_patched_branch() -> None:
    """The metadata generation's refund history took the 'case-metadata' branch (memo with the proposal and the
    receipt) and carries a summary on every scheduled activity, so replaying it tests that code."""
    history = WorkflowHistory.from_json(
        "approved", json.loads((RELEASE_0_1.folder / "approved_refund-2026-12-issue10.json").read_text())
    )
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    patch_ids = {e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data for e in markers}
    assert any(b"case-metadata" in patch for patch in patch_ids)
    memo_keys = {
        key
        for e in history.events
        if e.HasField("workflow_properties_modified_event_attributes")
        for key in e.workflow_properties_modified_event_attributes.upserted_memo.fields
    }
    assert {"proposal", "receipt"} <= memo_keys
    scheduled = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    assert scheduled and all(e.user_metadata.summary.data for e in scheduled)


def test_the_local_steps_generation_replays_markers_and_compressed_payloads() -> None:
    """The local-steps generation's refund history took the 'short-steps-local' branch (the applicant check and the four
    tools as local-activity markers, none scheduled) and holds compressed payloads, so replaying it
    tests that branch and the codec's decoding."""
    history = WorkflowHistory.from_json(
        "approved", json.loads((RELEASE_0_1.folder / "approved_refund-2026-12-issue13.json").read_text())
    )
    markers = [
        e.marker_recorded_event_attributes for e in history.events if e.HasField("marker_recorded_event_attributes")
    ]
    patch_ids = {m.details["patch-data"].payloads[0].data for m in markers if "patch-data" in m.details}
    assert any(b"short-steps-local" in patch for patch in patch_ids)
    assert len([m for m in markers if m.marker_name == "core_local_activity"]) == 5
    scheduled = {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    assert scheduled.isdisjoint({"verify_applicant", "run_investigation_tool"})
    assert {"plan_case", "investigate_turn", "compose_answer", "review_answer", "execute_refund"} <= scheduled
    inputs = [
        payload
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        for payload in e.activity_task_scheduled_event_attributes.input.payloads
    ]
    assert any(payload.metadata.get("encoding") == ENCODING.encode() for payload in inputs)


NO_HISTORY = Path("no-history-recorded-yet")


@pytest.mark.parametrize(
    "path", CURRENT_HISTORIES or [NO_HISTORY], ids=[p.stem for p in CURRENT_HISTORIES] or ["none-recorded"]
)
async def test_current_release_history_replays_in_process_without_nondeterminism(path: Path) -> None:
    """The current release's histories (the manifest's release with commit null) replay against this tree."""
    assert path != NO_HISTORY, f"{CURRENT.folder} holds no history: record one with scripts/record_histories.py"
    data = json.loads(path.read_text(encoding="utf-8"))
    history = WorkflowHistory.from_json(recorded_workflow_id(data, f"replay-{path.stem}"), data)
    replayer = Replayer(
        workflows=[SupportCaseWorkflow], data_converter=CASE_DATA_CONVERTER, workflow_runner=workflow_runner()
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


ADDED_TO_0_12 = (
    "action_escalated_then_expired",
    "refund_escalated_then_expired",
    "action_address_confirmed",
    "action_return_approved",
    "action_exchange_confirmed",
    "action_exchange_variant_needed",
    "action_default_address_confirmed",
    "refund_as_action_approved",
    "action_withdrawn_closed",
    "action_noted_near_expiry_then_expired",
    "refund_noted_near_expiry_then_expired",
)
"""Shapes recorded on 0.12 after its first generation (``record_histories.py --only``): each is committed and
replays with the rest of the current release's histories."""
ESCALATIONS = ADDED_TO_0_12[:2]
"""Recorded on 0.12 with ``--only escalations``: a cancellation and a refund whose tenant names an escalation
reviewer, each escalated before it closed undecided."""


NOTED_NEAR_EXPIRY = ADDED_TO_0_12[-2:]
"""Recorded on 0.12 with ``--only near-expiry``: a cancellation and a refund whose tenant names no escalation
reviewer, each noted as it neared its expiry (the near-expiry patch) before it closed undecided."""


def patches_and_activities(name: str) -> tuple[list[bytes], list[str]]:
    """The patch ids (as recorded) and the activities scheduled, in order, of the v0.12 history ``name``."""
    [path] = sorted(releases()["v0.12"].folder.glob(f"{name}-*.json"))
    history = WorkflowHistory.from_json(name, json.loads(path.read_text(encoding="utf-8")))
    patches = [
        event.marker_recorded_event_attributes.details["patch-data"].payloads[0].data
        for event in history.events
        if event.HasField("marker_recorded_event_attributes")
        and event.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    activities = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    return patches, activities


def test_the_refund_as_action_history_takes_its_patch_and_pays_through_the_action() -> None:
    """Recorded on 0.12 with ``--only refund-actions``: its tenant names ``refund_order``, so the case took the
    refund-as-action patch and executed the action; every refund recorded before took its own proposal."""
    patches, activities = patches_and_activities("refund_as_action_approved")
    assert any(REFUND_AS_ACTION_PATCH.encode() in data for data in patches), patches
    assert "execute_action" in activities and "execute_refund" not in activities, activities


def test_the_closed_action_history_closes_its_withdrawn_proposal_at_the_commerce_server() -> None:
    """Recorded on 0.12 with ``--only closed-actions``: the customer withdrew, and the case took the
    close-action-proposal patch and closed the proposal; the action histories recorded before end without."""
    patches, activities = patches_and_activities("action_withdrawn_closed")
    assert any(CLOSE_ACTION_PATCH.encode() in data for data in patches), patches
    assert activities.count("close_action_proposal") == 1 and "execute_action" not in activities, activities


@pytest.mark.parametrize("name", NOTED_NEAR_EXPIRY)
def test_the_near_expiry_histories_hold_the_patch_and_its_timer_and_replay(name: str) -> None:
    """Each holds the near-expiry patch marker and its timer before the expiry timer, so the in-process
    replay of the current release's histories tests both branches: these take the patch, the histories
    recorded before it (``expired_refund``, ``action_cancel_expired``) do not and wait with one timer."""
    [path] = sorted(releases()["v0.12"].folder.glob(f"{name}-*.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    history = WorkflowHistory.from_json(name, data)
    patches = [
        event.marker_recorded_event_attributes.details["patch-data"]
        for event in history.events
        if event.HasField("marker_recorded_event_attributes")
        and event.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    assert len(patches) == 1 and NEAR_EXPIRY_PATCH.encode() in patches[0].payloads[0].data, patches
    timers = [
        json.loads(event.user_metadata.summary.data)
        for event in history.events
        if event.HasField("timer_started_event_attributes")
    ]
    assert NEAR_EXPIRY_TIMER_SUMMARY in timers[0] and NEAR_EXPIRY_TIMER_SUMMARY not in timers[1], timers
    assert len(timers) == 2, timers


@pytest.mark.parametrize("name", ESCALATIONS)
def test_the_escalation_histories_wake_before_the_expiry_and_replay(name: str) -> None:
    """Each escalation history holds the escalation timer (its summary) before the expiry timer, so the
    in-process replay of the current release's histories tests that branch."""
    [path] = sorted(releases()["v0.12"].folder.glob(f"{name}-*.json"))
    history = WorkflowHistory.from_json(name, json.loads(path.read_text(encoding="utf-8")))
    timers = [
        event.user_metadata.summary.data.decode()
        for event in history.events
        if event.HasField("timer_started_event_attributes")
    ]
    escalation = [n for n, summary in enumerate(timers) if "escalation reviewer" in summary]
    assert escalation and escalation[0] < len(timers) - 1, timers


def test_the_shapes_added_to_0_12_are_committed() -> None:
    stems = {path.stem.split("-2026-12")[0] for path in releases()["v0.12"].histories()}
    assert set(ADDED_TO_0_12) <= stems, sorted(set(ADDED_TO_0_12) - stems)
