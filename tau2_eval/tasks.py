"""Which of τ²-bench's retail tasks a run takes: a split of its own (``base``: all 114, ``train``: 74,
``test``: 40, from its ``split_tasks.json``) or task ids separated by commas."""

from __future__ import annotations

import json
from pathlib import Path

SPLITS = ("base", "train", "test")


def select_tasks(selection: str, tasks_file: Path, split_file: Path) -> list[str]:
    """The task ids ``selection`` names, in τ²'s order; a ``ValueError`` names an unknown split or task."""
    known = [str(task["id"]) for task in json.loads(tasks_file.read_text(encoding="utf-8"))]
    if selection in SPLITS:
        split = {str(task_id) for task_id in json.loads(split_file.read_text(encoding="utf-8"))[selection]}
        return [task_id for task_id in known if task_id in split]
    wanted = [part.strip() for part in selection.split(",") if part.strip()]
    unknown = [task_id for task_id in wanted if task_id not in known]
    if not wanted or unknown:
        raise ValueError(
            f"--tasks takes {', '.join(SPLITS)} or task ids 0-{len(known) - 1} separated by commas, "
            f"not {(unknown or [selection])[0]!r}"
        )
    return wanted
