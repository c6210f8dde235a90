"""What the ``confirm_continued_run`` activity is asked, and what it confirms (:mod:`activities.case.run_origin`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ContinuedRunCheck(BaseModel):
    """A run that resumes a carried case state asks about the run it continued: Temporal's
    ``continued_run_id`` and this run's task queue, both from ``workflow.info()``, never from the input."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    continued_run_id: str = Field(min_length=1, max_length=100)
    task_queue: str = Field(min_length=1, max_length=1000)


class ContinuedRunConfirmed(BaseModel):
    """The earlier run, as Temporal describes it: a case of this task queue closed by continuing as new."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    workflow_type: str
    status: str
