"""The round-trip floor for benchmarks/bench_performance.py: a workflow of N sequential no-op activities.

It does nothing but what every step of a case costs in Temporal itself (a workflow task, an activity
task, their history events), so N steps of it on the same dev server and worker machinery is the least
a case of N activities can take here, whatever the service does inside them.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="floor_noop")
async def floor_noop(step: int) -> int:
    return step + 1


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    @workflow.run
    async def run(self, steps: int) -> int:
        done = 0
        for _ in range(steps):
            done = await workflow.execute_activity(floor_noop, done, start_to_close_timeout=timedelta(seconds=30))
        return done
