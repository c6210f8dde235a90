"""``python -m customer_channel`` as the dev server starts it (``devstack.servers.start_customer_channel``):
it serves its health, the demo sign-in and the API against a real Temporal dev server, and its log holds
no credential. A bad setting is one line on stderr and exit status 2, before anything is served."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from contracts.credentials import ISSUER_KID
from devstack.servers import DevServer, free_port, start_customer_channel
from keystore import DIRECTORY_ENV, create_demo_directory, private_key_path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_directory_or_issuer_key_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    command = [sys.executable, "-m", "customer_channel", "--state-dir", str(tmp_path), "--port", str(free_port())]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    [line] = done.stderr.splitlines()
    assert line.startswith("customer_channel: No directory at "), line
    create_demo_directory(tmp_path)
    private_key_path(tmp_path, ISSUER_KID).unlink()
    done = subprocess.run([*command, "--demo-sign-in"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    [line] = done.stderr.splitlines()
    assert line.startswith("customer_channel: No private key at ") and "issuer.pem" in line, line
    assert "Traceback" not in done.stderr


def test_the_dev_servers_channel_serves_and_logs_no_credential(
    temporal_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    create_demo_directory(tmp_path)
    log = tmp_path / "customer-channel.log"
    channel = start_customer_channel(log, tmp_path, temporal_address=temporal_server.address, port=free_port())
    try:
        with httpx2.Client(base_url=channel.endpoint, timeout=30) as http:
            assert http.get("/healthz").json() == {"status": "ok", "demo_sign_in": True}
            issued = http.post("/demo/token", json={"subject": "alice"}).json()
            token = issued["token"]
            missing = http.get(f"/v1/conversations/{issued['case_id']}", headers={"Authorization": f"Bearer {token}"})
            assert missing.status_code == 404 and missing.json()["message"] == "No such conversation."
            forged = http.get(f"/v1/conversations/{issued['case_id']}", headers={"Authorization": f"Bearer {token}x"})
            assert forged.status_code == 403
            assert "/v1/conversations" in http.get("/openapi.json").text
    finally:
        channel.stop()
    written = log.read_text(encoding="utf-8")
    assert "GET /healthz" in written  # the access log is on
    assert token not in written and token[:40] not in written
