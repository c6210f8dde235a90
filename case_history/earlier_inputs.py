"""Reading the start input of a run that an earlier release continued as new.

Releases 0.1 to 0.9 carried a waiting case into its next run as a separate model of its state
(``CarriedCase``: ``events``, ``dropped_events``, ``model_label``, ``tokens_known``, a list of passages
...); from 0.10 on a run carries :class:`contracts.case_input.CaseState` itself. A pinned case continues
on its own build, so no workflow reads the earlier shape; the audit and ``verify`` still read every
release's histories, so they read that shape here, as the state it describes. What the earlier shape
never held (the lifecycle, a decision) is the waiting, undecided state it was carried in.
"""

from __future__ import annotations

from typing import Any

from contracts.case_input import CaseInput

EARLIER_KEYS = frozenset({"events", "dropped_events", "model_label", "tokens_known", "tokens_unknown_calls"})
"""Keys of the earlier carried shape that the state does not have (by these it is recognised)."""


def earlier_carried_input(raw: Any) -> CaseInput | None:
    """A run's start input (its decoded JSON) read as an earlier release's continued case, or None when
    it is not one."""
    carried = raw.get("carried") if isinstance(raw, dict) else None
    if not isinstance(carried, dict) or not EARLIER_KEYS & carried.keys():
        return None
    state: dict[str, Any] = {
        "lifecycle": {"phase": "waiting_approval"},
        "log": {"events": carried.get("events", []), "dropped": carried.get("dropped_events", 0)},
        "model": {
            "label": carried.get("model_label"),
            "tokens_known": carried.get("tokens_known", 0),
            "unknown_calls": carried.get("tokens_unknown_calls", 0),
            **({"usage": carried["usage"]} if carried.get("usage") else {}),
        },
        "evidence": {passage["passage_id"]: passage for passage in carried.get("evidence", [])},
        **{
            key: carried[key]
            for key in (
                "continued",
                "budgets",
                "notes",
                "plan",
                "facts",
                "quote",
                "answer",
                "answer_admitted",
                "proposal",
                "record_path",
                "record_error",
                "directory",
                "approvals",
                "used_approvals",
            )
            if key in carried
        },
    }
    try:
        return CaseInput.model_validate({**raw, "carried": state})
    except ValueError:
        return None
