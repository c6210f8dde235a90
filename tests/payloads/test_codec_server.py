"""The codec server as a real process: the protocol's answers, CORS for the Web UI only, its errors, and
its command line (one line and exit 2 for a bad argument, never a traceback)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from contracts.payload_codec import COMPRESS_AT, ENCODING, decode_payload_sync, encode_payload
from devstack.servers import LocalServer, start_codec_server

ROOT = Path(__file__).resolve().parents[2]
UI = "http://localhost:8080"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    running = start_codec_server(tmp_path_factory.mktemp("codec") / "codec.log", cors_origins=(UI,))
    yield running
    running.stop()


def _call(
    server: LocalServer, path: str, body: bytes | None = None, method: str = "POST", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(server.endpoint + path, data=body, method=method)
    for name, value in headers.items():
        request.add_header(name.replace("_", "-"), value)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _payloads_json(*payloads: Payload) -> bytes:
    return json.dumps({"payloads": [json_format.MessageToDict(p) for p in payloads]}).encode()


def _json_payload(value: object) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())


def test_encode_then_decode_round_trips_and_leaves_small_payloads_plain(server: LocalServer) -> None:
    large, small = _json_payload({"evidence": ["RETURNS:p02 refund window"] * 400}), _json_payload({"a": 1})
    status, _, body = _call(server, "/encode", _payloads_json(large, small), Content_Type="application/json")
    assert status == 200
    encoded = [json_format.ParseDict(p, Payload()) for p in json.loads(body)["payloads"]]
    assert encoded[0].metadata["encoding"] == ENCODING.encode() and encoded[1] == small
    assert encoded[0] == encode_payload(large)
    status, _, body = _call(server, "/ns/decode", _payloads_json(*encoded), Content_Type="application/json")
    assert status == 200
    assert [json_format.ParseDict(p, Payload()) for p in json.loads(body)["payloads"]] == [large, small]


def test_cors_is_for_the_given_ui_origin_only(server: LocalServer) -> None:
    body = _payloads_json(_json_payload([1]))
    _, headers, _ = _call(server, "/decode", body, Origin=UI, X_Namespace="default")
    assert headers["access-control-allow-origin"] == UI and headers["access-control-allow-credentials"] == "true"
    status, headers, _ = _call(server, "/decode", body, Origin="http://localhost:8233")
    assert status == 200 and "access-control-allow-origin" not in headers  # not this server's UI
    status, headers, text = _call(server, "/decode", method="OPTIONS", Origin="http://evil.example")
    assert status == 403 and "access-control-allow-origin" not in headers
    assert text.decode().count("\n") == 1
    status, headers, _ = _call(server, "/default/decode", method="OPTIONS", Origin=UI)
    assert status == 204 and headers["access-control-allow-origin"] == UI


@pytest.mark.parametrize(
    ("path", "method", "body", "status", "says"),
    [
        ("/decode", "POST", b"not json", 400, "not a Payloads message"),
        ("/decode", "POST", b'{"payloads": [{"data": 5}]}', 400, "not a Payloads message"),
        ("/decode", "POST", None, 400, "not a Payloads message"),
        ("/nothing", "POST", b"{}", 404, "not found"),
        ("/decode", "GET", None, 405, "method not allowed"),
    ],
)
def test_errors_are_one_line_with_the_protocols_status(
    server: LocalServer, path: str, method: str, body: bytes | None, status: int, says: str
) -> None:
    got, _, text = _call(server, path, body, method=method)
    assert got == status and says in text.decode() and text.decode().count("\n") == 1


def test_a_payload_that_does_not_decode_is_a_400(server: LocalServer) -> None:
    bad = Payload(metadata={"encoding": ENCODING.encode()}, data=b"not zlib")
    status, _, text = _call(server, "/decode", _payloads_json(bad))
    assert status == 400 and "is not zlib data" in text.decode()


def test_an_empty_list_and_the_health_check(server: LocalServer) -> None:
    assert _call(server, "/decode", b"{}")[2] in (b"{}", b'{"payloads": []}')
    status, _, text = _call(server, "/health", method="GET")
    assert (status, text) == (200, b"ok\n")


def test_a_decoded_payload_is_the_original_json_with_its_metadata(server: LocalServer) -> None:
    original = _json_payload({"question": "请退款 QH-1001", "pad": "x" * COMPRESS_AT})
    status, _, body = _call(server, "/decode", _payloads_json(encode_payload(original)))
    [returned] = json.loads(body)["payloads"]
    assert status == 200 and base64.b64decode(returned["metadata"]["encoding"]) == b"json/plain"
    assert json_format.ParseDict(returned, Payload()) == decode_payload_sync(encode_payload(original)) == original


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--port", "http"], "'http' is not a port"),
        (["--port", "70000"], "is not a port"),
        (["--cors-origin", "*"], "no wildcards"),
        (["--cors-origin", "http://localhost:8233/ui"], "is not an origin"),
        (["--cors-origin", "localhost:8233"], "is not an origin"),
        (["--unknown"], "unrecognized arguments: --unknown"),
        (["--host", "no-such-host.invalid"], "does not resolve"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codec_server", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("codec-server: ") and says in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line_and_exit_2(server: LocalServer) -> None:
    port = server.endpoint.rsplit(":", 1)[1]
    done = subprocess.run(
        [sys.executable, "-m", "codec_server", "--port", port], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "cannot listen on 127.0.0.1:" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
