"""Benchmark: end-to-end case latency and throughput with the rehearsal model (prints figures).

    .venv/bin/python benchmarks/bench_cases.py [CASES] [CONCURRENCY]

Starts a throwaway Temporal dev server and one in-process worker (real commerce MCP server over
stdio, SQLite), then runs delivery questions until they complete. The rehearsal model answers in
microseconds, so the figures measure the lifecycle's own cost: Temporal round trips, MCP calls,
retrieval and case records. They say nothing about a real model's latency.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from case_client import CaseClient
from contracts.case import CaseStatus
from contracts.knowledge import Language
from devstack.rehearsal_stack import rehearsal_stack
from keystore import demo_identity

QUESTION = "Where is my order QH-1005? Can I still change the delivery address?"
CASE_TIMEOUT_SECONDS = 600.0


async def one_case(on_queue: CaseClient) -> float:
    started = time.perf_counter()
    case = await on_queue.start(
        demo_identity("alice"), QUESTION, language=Language.EN, case_id=f"bench-{uuid.uuid4().hex[:10]}"
    )
    result = await case.ended(timeout=CASE_TIMEOUT_SECONDS)
    if result.status is not CaseStatus.COMPLETED:
        raise RuntimeError(f"benchmark case ended {result.status}: {result.reason}")
    return time.perf_counter() - started


async def main(cases: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with rehearsal_stack(Path(tmp)) as stack:
            on_queue = stack.cases  # signs each case's applicant token with the stack's demo keys
            await one_case(on_queue)
            limit = asyncio.Semaphore(concurrency)

            async def bounded() -> float:
                async with limit:
                    return await one_case(on_queue)

            started = time.perf_counter()
            latencies = sorted(await asyncio.gather(*(bounded() for _ in range(cases))))
            elapsed = time.perf_counter() - started
    print(f"{cases} delivery cases, concurrency {concurrency}, one worker, rehearsal model")
    print(
        f"throughput {cases / elapsed:.2f} cases/s; latency median {statistics.median(latencies):.2f} s, "
        f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f} s, max {latencies[-1]:.2f} s"
    )


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    asyncio.run(main(*(arguments + [20, 5][len(arguments) :])))
