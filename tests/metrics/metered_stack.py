"""The pieces of tests/metrics/test_exported_metrics.py's stack that other suites do not share.

A Temporal dev server of its own with ``--metrics-port`` (the alert rules read the server's own
``pending_polls`` and ``approximate_backlog_*``; the session's shared server serves no metrics), and a
model provider that answers as the rehearsal model does but reports token usage, so that tokens and cost
are counted by tenant and model, with a price table for it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import rehearsal
from devstack.servers import dev_server_flags, free_port, stop_process, wait_for_port
from devstack.temporal_cli import temporal_cli
from tests.adversarial.provider import Reply, Request
from tests.metrics.scrape import Scrape, scrape

USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
PROMPT_USD_PER_MTOK = "1.50"
COMPLETION_USD_PER_MTOK = "6.00"
PICO_USD_PER_REPLY = 100 * 1_500_000 + 20 * 6_000_000
"""One reply's price in pico-USD: tokens times micro-USD per million tokens."""


@dataclass
class MeteredTemporal:
    process: subprocess.Popen[bytes]
    address: str
    metrics_url: str

    def stop(self) -> None:
        stop_process(self.process, grace=10)


def start_metered_temporal(state_dir: Path) -> MeteredTemporal:
    """``temporal server start-dev`` with the case search attributes and ``--metrics-port``."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port, metrics_port = free_port(), free_port()
    command = [
        temporal_cli(),
        *("server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"),
        *("--metrics-port", str(metrics_port), "--db-filename", str(state_dir / "temporal.db")),
        *("--log-level", "error", *dev_server_flags()),
        *("--dynamic-config-value", "matching.maxTaskQueuesInDeploymentVersion=1000"),
        # the backlog gauges every second rather than every minute or so, so a test need not wait for them
        *("--dynamic-config-value", 'matching.backlogMetricsEmitInterval="1s"'),
    ]
    with (state_dir / "temporal.log").open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = MeteredTemporal(process, f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics")
    try:
        wait_for_port("127.0.0.1", port, timeout=60, process=process)
        wait_for_port("127.0.0.1", metrics_port, timeout=60, process=process)
    except BaseException:
        server.stop()
        raise
    return server


def price_table(path: Path, model: str) -> Path:
    path.write_text(
        f'[openai-compatible."{model}"]\n'
        f'prompt_usd_per_mtok = "{PROMPT_USD_PER_MTOK}"\n'
        f'completion_usd_per_mtok = "{COMPLETION_USD_PER_MTOK}"\n',
        encoding="utf-8",
    )
    return path


def with_usage(reply: Reply) -> Reply:
    return replace(reply, usage=dict(USAGE))


def rehearsed_with_usage(request: Request) -> Reply:
    """What the rehearsal model answers, with the provider's usage report attached."""
    answer: dict[str, Any] = rehearsal.respond(request.body)
    choice = answer["choices"][0]
    message = choice["message"]
    return Reply(
        content=message.get("content"),
        tool_calls=tuple(message.get("tool_calls") or ()),
        finish_reason=choice.get("finish_reason"),
        usage=dict(USAGE),
    )


def scrape_until(url: str, ready: Callable[[Scrape], bool], timeout: float = 60) -> Scrape:
    """Scrape ``url`` until ``ready`` holds for the scrape (a server emits some gauges periodically)."""
    deadline = time.monotonic() + timeout
    while True:
        scraped = scrape(url)
        if ready(scraped) or time.monotonic() > deadline:
            return scraped
        time.sleep(0.5)


def temporal_queue_label(task_queue: str) -> str:
    """How the Temporal server writes a task queue name in its metrics' ``taskqueue`` label."""
    return task_queue.replace("-", "_")
