"""Benchmark: BM25 search and refund quotes (prints figures; asserts nothing).

.venv/bin/python benchmarks/bench_knowledge.py
"""

from __future__ import annotations

import statistics
import time

from contracts.commerce import FIXTURE_AS_OF
from contracts.knowledge import Language
from knowledge.store import KnowledgeBase

QUERIES = {
    Language.EN: [
        "refund window delivery warehouse receipt",
        "where is my parcel tracking",
        "is my lamp under warranty",
        "invoice total and refundable balance",
    ],
    Language.ZH: ["退款期限 签收 退货 仓库", "包裹 物流 跟踪", "台灯 保修", "发票 合计 可退余额"],
}


def main(rounds: int = 300) -> None:
    started = time.perf_counter()
    knowledge = KnowledgeBase.load()
    print(f"load {len(knowledge.passages)} passages: {1000 * (time.perf_counter() - started):.1f} ms")
    for language, queries in QUERIES.items():
        knowledge.search(queries[0], tenant="qinghe", language=language, as_of=FIXTURE_AS_OF)
        timings = []
        for _ in range(rounds):
            for query in queries:
                t0 = time.perf_counter()
                knowledge.search(query, tenant="qinghe", language=language, as_of=FIXTURE_AS_OF)
                timings.append(time.perf_counter() - t0)
        timings.sort()
        print(
            f"search {language.value}: {len(timings)} queries, median {1e6 * statistics.median(timings):.0f} us, "
            f"p95 {1e6 * timings[int(0.95 * len(timings))]:.0f} us"
        )


if __name__ == "__main__":
    main()
