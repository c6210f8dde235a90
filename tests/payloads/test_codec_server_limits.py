"""The codec server against amplification and malformed input, as a real process: requests that would
inflate to gigabytes are refused in one line while the process' peak memory stays small, more than
:data:`codec_server.app.MAX_PAYLOADS` payloads or :data:`codec_server.app.REQUEST_BUDGET` inflated
bytes are a 413, invalid base64 is a 400, and a non-loopback bind is said on stderr."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from codec_server.app import MAX_PAYLOADS, REQUEST_BUDGET
from contracts.payload_codec import ENCODING, encode_payload
from devstack.servers import LocalServer, free_port, start_codec_server

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
PEAK_RSS_BOUND = 300 * MiB


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    """A fresh server per test, so that its peak memory is this test's."""
    running = start_codec_server(tmp_path / "codec.log")
    yield running
    running.stop()


def _post(server: LocalServer, path: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(server.endpoint + path, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _body(payloads: list[Payload]) -> bytes:
    return json.dumps({"payloads": [json_format.MessageToDict(p) for p in payloads]}).encode()


def _bomb(inflated: int) -> Payload:
    original = Payload(metadata={"encoding": b"json/plain"}, data=b"\x00" * inflated)
    return Payload(metadata={"encoding": ENCODING.encode()}, data=zlib.compress(original.SerializeToString(), 9))


def _peak_rss(server: LocalServer) -> int:
    """The server process' peak resident memory (VmHWM), in bytes."""
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    [line] = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


def _one_line(text: str) -> None:
    assert text.count("\n") == 1 and text.endswith("\n") and "Traceback" not in text, text


def test_requests_that_would_inflate_to_gigabytes_are_refused_and_memory_stays_small(server: LocalServer) -> None:
    bomb = _bomb(15 * MiB)  # 15 KB each, within the old per-payload cap of 16 MiB
    cases = [
        [bomb] * 16,  # about 256 KiB of request that inflated to 250 MB
        [bomb] * MAX_PAYLOADS,  # about 15 MB of request, 15 GiB inflated
    ]
    for payloads in cases:
        status, text = _post(server, "/decode", _body(payloads))
        assert status in (400, 413), (status, text[:200])
        _one_line(text)
        assert "inflates past" in text
    assert _peak_rss(server) < PEAK_RSS_BOUND, _peak_rss(server)


def test_a_request_past_its_total_inflated_budget_is_a_413(server: LocalServer) -> None:
    text = "".join(random.Random(7).choices("ab", k=3 * MiB)).encode()  # compresses about 6 times
    payload = encode_payload(Payload(metadata={"encoding": b"json/plain"}, data=text))
    count = REQUEST_BUDGET // (3 * MiB) + 1  # each under its own caps, together past the budget
    status, answer = _post(server, "/decode", _body([payload] * count))
    assert status == 413 and "total budget" in answer, (status, answer[:200])
    _one_line(answer)
    status, answer = _post(server, "/decode", _body([payload] * (count - 1)))
    assert status == 200 and len(json.loads(answer)["payloads"]) == count - 1
    assert _peak_rss(server) < PEAK_RSS_BOUND, _peak_rss(server)


def test_more_payloads_than_the_cap_is_a_413(server: LocalServer) -> None:
    small = Payload(metadata={"encoding": b"json/plain"}, data=b"1")
    for path in ("/decode", "/encode"):
        status, text = _post(server, path, _body([small] * (MAX_PAYLOADS + 1)))
        assert status == 413 and f"more than {MAX_PAYLOADS} payloads" in text
        _one_line(text)
    assert _post(server, "/decode", _body([small] * MAX_PAYLOADS))[0] == 200


@pytest.mark.parametrize(
    "payload",
    [
        {"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "!!!!"},
        {"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": "eyJhIjogMX0= trailing"},
        {"metadata": {"encoding": "not base64 at all"}, "data": "e30="},
        {"data": "a"},
    ],
)
def test_invalid_base64_is_a_400_in_one_line(server: LocalServer, payload: dict[str, object]) -> None:
    for path in ("/decode", "/encode"):
        status, text = _post(server, path, json.dumps({"payloads": [payload]}).encode())
        assert status == 400 and "not a Payloads message" in text and "base64" in text, (status, text)
        _one_line(text)


def test_a_deeply_nested_body_is_a_400_in_one_line(server: LocalServer) -> None:
    status, text = _post(server, "/decode", b'{"payloads": ' + b"[" * 100_000)
    assert status == 400 and "not a Payloads message" in text
    _one_line(text)


def test_valid_base64_in_either_alphabet_and_without_padding_is_read() -> None:
    from codec_server.app import _parse_payloads

    for data in ("eyJhIjogMX0=", "eyJhIjogMX0", "-_-_", "+/+/"):
        [payload] = _parse_payloads(json.dumps({"payloads": [{"data": data}]}).encode()).payloads
        assert payload.data


def _start(host: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "codec_server", "--host", host, "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    started = process.stdout.readline()  # its start line, printed once it listens
    return process, started


@pytest.mark.parametrize(("host", "warns"), [("0.0.0.0", True), ("127.0.0.1", False), ("localhost", False)])
def test_a_non_loopback_bind_is_said_in_one_line_on_stderr(host: str, warns: bool) -> None:
    process, started = _start(host)
    try:
        assert "Temporal codec server on http://" in started, started
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    warnings = [line for line in stderr.splitlines() if "warning" in line]
    if warns:
        assert len(warnings) == 1 and "not only on loopback" in warnings[0] and host in warnings[0], stderr
    else:
        assert warnings == [], stderr
