"""``python -m reviewer_console`` as it serves: its access log (uvicorn's, one line per request) holds no
enrollment token, whether the link is followed as it is printed now (the token in the fragment, posted
by the page) or in its old form (``/enroll?token=...``, written ``token=[redacted]``); and bound beyond
loopback it says so in one line on stderr, as the codec server does."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from typer.testing import CliRunner

import reviewer_console.__main__ as console_main
from devstack.servers import free_port
from keystore.enrollment import mint_enrollment_link
from reviewer_console import ConsoleConfig
from tests.reviewer_console.console_browser import CSRF
from tests.reviewer_console.console_double import CaseSourceDouble, waiting_view


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_the_access_log_of_an_enrollment_holds_no_token(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers: list[uvicorn.Server] = []

    class RecordedServer(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            servers.append(self)

    async def connect(*_: Any, **__: Any) -> CaseSourceDouble:
        return CaseSourceDouble(waiting_view("c0ffee000001"))

    monkeypatch.setattr(console_main.CaseClient, "connect", connect)
    monkeypatch.setattr(uvicorn, "Server", RecordedServer)
    port = free_port()
    config = ConsoleConfig.for_origin(f"http://localhost:{port}")
    serving = asyncio.create_task(console_main.serve("127.0.0.1", port, state_dir, config))
    lines = Lines()
    try:
        for _ in range(200):
            if (servers and servers[0].started) or serving.done():
                break
            await asyncio.sleep(0.05)
        assert servers and servers[0].started, "the console did not start"
        logging.getLogger("uvicorn.access").addHandler(lines)  # after uvicorn configured its loggers
        tokens: list[str] = []
        statuses: list[int] = []
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            link = mint_enrollment_link(state_dir, "chen", console_url=config.origin, now=datetime.now(UTC))
            tokens.append(re.split(r"[#?]token=", link, maxsplit=1)[1])
            page = await http.get(link.removeprefix(config.origin).split("#", 1)[0])  # what a browser requests
            headers = {"X-CSRF-Token": (CSRF.findall(page.text) or [""])[0]}
            for step in ("/enroll/claim", "/enroll/options"):  # the page's script posts the token
                statuses.append((await http.post(step, json={"token": tokens[0]}, headers=headers)).status_code)
            old = mint_enrollment_link(state_dir, "chen", console_url=config.origin, now=datetime.now(UTC))
            tokens.append(re.split(r"[#?]token=", old, maxsplit=1)[1])
            await http.get(f"/enroll?token={tokens[-1]}")  # an old link's form, as someone may still open it
    finally:
        if servers:
            servers[0].should_exit = True
        await serving
        logging.getLogger("uvicorn.access").removeHandler(lines)
    assert len(lines.lines) == 4, lines.lines
    for token in tokens:
        for line in lines.lines:
            assert token not in line and token[-20:] not in line, line
    assert '"GET /enroll HTTP/1.1" 200' in lines.lines[0], lines.lines
    assert '"GET /enroll?token=[redacted] HTTP/1.1" 400' in lines.lines[-1], lines.lines
    assert statuses == [200, 200]


@pytest.mark.parametrize(
    ("host", "warns"), [("0.0.0.0", True), ("::", True), ("127.0.0.1", False), ("localhost", False)]
)
def test_a_bind_beyond_loopback_is_said_in_one_line_on_stderr(
    host: str, warns: bool, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[str] = []

    async def serve(host: str, *_: Any) -> None:
        served.append(host)

    monkeypatch.setattr(console_main, "serve", serve)
    result = CliRunner().invoke(console_main.cli, ["--host", host, "--state-dir", str(state_dir)])
    assert result.exit_code == 0, result.output
    assert served == [host]
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    if warns:
        assert len(warnings) == 1, result.stderr
        [line] = warnings
        shown = "[::]" if host == "::" else host
        assert line.startswith(f"reviewer_console: warning: listening on {shown}, not only on loopback: "), line
        assert "plain http" in line and "127.0.0.1" in line
    else:
        assert warnings == [], result.stderr
