"""The codec server's HTTP app: Temporal's remote codec protocol over the case codec.

The CLI and the Web UI (from the browser, with CORS) send it payloads to decode or encode with
:mod:`contracts.payload_codec`, so a reviewer can read compressed payloads. A request is bounded before
anything is inflated, so a small request cannot make it hold gigabytes (the protocol and the limits:
:func:`build_app`).
"""

from __future__ import annotations

import binascii
import json
from base64 import b64decode
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payload, Payloads

from contracts.payload_codec import (
    DecodeBudget,
    DecodeBudgetExceeded,
    PayloadDecodeError,
    decode_payload_sync,
    encode_payload,
)

DEV_UI_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
"""The dev server's Web UI (``make dev-server``): the origin is whichever host the browser was given."""
ALLOWED_HEADERS = ("Authorization", "Authorization-Extras", "Content-Type", "X-Namespace")
"""What the Web UI sends to a codec server (the last two always, the first two with "pass access token")."""
MAX_BODY_BYTES = 32 * 1024 * 1024
"""A request body larger than this is refused (413): Temporal's own limit per payload is 2 MiB."""
MAX_PAYLOADS = 1000
"""A request with more payloads than this is refused (413): the Web UI sends one event's payloads."""
REQUEST_BUDGET = 32 * 1024 * 1024
"""What the payloads of one request may inflate to in all; past it the request is refused (413)."""
PREFLIGHT_MAX_AGE = "600"
ACTIONS: dict[str, Callable[[Payload, DecodeBudget], Payload]] = {
    "decode": decode_payload_sync,
    "encode": lambda payload, _budget: encode_payload(payload),
}


class BodyTooLarge(Exception):
    """The request body is over :data:`MAX_BODY_BYTES`."""


class TooManyPayloads(Exception):
    """The request holds more than :data:`MAX_PAYLOADS` payloads."""


class NotPayloads(ValueError):
    """The body is not a ``Payloads`` message as protobuf JSON (said in one line)."""


def build_app(cors_origins: Sequence[str] = DEV_UI_ORIGINS) -> Starlette:
    """The codec server, with CORS for ``cors_origins`` (exact ``scheme://host[:port]`` origins).

    ``POST .../decode`` and ``POST .../encode`` take a ``Payloads`` message as protobuf JSON
    (``{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}``) and answer the same
    shape, each payload decoded (``binary/zlib`` inflated, any other returned as it is) or encoded
    (compressed from :data:`contracts.payload_codec.COMPRESS_AT` bytes up). Only the last segment of the
    path counts, so ``/default/decode`` works as well (the CLI's ``{namespace}`` template); one codec
    serves every namespace and the ``X-Namespace`` header is not needed.

    The Web UI calls it from the browser, so requests from the origins given (the dev server's UI by
    default) get CORS headers, credentials included (the UI's "Include cross-origin credentials"), and
    an ``OPTIONS`` preflight from them is answered; other origins get no CORS headers and a 403
    preflight. ``GET /health`` answers ``ok`` (the compose health check). A malformed body (invalid
    base64 included) or a payload that does not decode is a 400 with one line of text, as the protocol
    asks. A request is bounded before anything is inflated: at most :data:`MAX_BODY_BYTES`,
    :data:`MAX_PAYLOADS` payloads and :data:`REQUEST_BUDGET` inflated bytes in all (each a 413), and
    each payload at most its own caps (:func:`contracts.payload_codec.decode_payload_sync`).
    """
    allowed = frozenset(cors_origins)

    def cors(request: Request, response: Response) -> Response:
        origin = request.headers.get("origin")
        response.headers["Vary"] = "Origin"
        if origin is not None and origin in allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Allow-Credentials"] = "true"
        return response

    def answer(request: Request, status: int, text: str, **headers: str) -> Response:
        return cors(request, PlainTextResponse(text + "\n", status_code=status, headers=headers))

    def preflight(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin not in allowed:
            return answer(request, 403, f"origin {origin} is not allowed (start the codec server with --cors-origin)")
        response = Response(status_code=204)
        response.headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
        response.headers["Access-Control-Allow-Headers"] = ", ".join(ALLOWED_HEADERS)
        response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
        return cors(request, response)

    async def endpoint(request: Request) -> Response:
        path = request.url.path.rstrip("/")
        if path == "/health":
            return PlainTextResponse("ok\n") if request.method in ("GET", "HEAD") else _not_allowed("GET")
        action = ACTIONS.get(path.rsplit("/", 1)[-1])
        if action is None:
            return answer(request, 404, "not found: POST .../decode or .../encode")
        if request.method == "OPTIONS":
            return preflight(request)
        if request.method != "POST":
            return cors(request, _not_allowed("POST, OPTIONS"))
        try:
            payloads = _parse_payloads(await _body(request))
            budget = DecodeBudget(REQUEST_BUDGET)
            converted = [action(payload, budget) for payload in payloads.payloads]
            del payloads
        except BodyTooLarge:
            return answer(request, 413, f"request body over {MAX_BODY_BYTES} bytes")
        except TooManyPayloads:
            return answer(request, 413, f"more than {MAX_PAYLOADS} payloads in one request")
        except NotPayloads as error:
            return answer(request, 400, f"not a Payloads message as protobuf JSON: {_one_line(error)}")
        except DecodeBudgetExceeded as error:
            return answer(request, 413, f"{_one_line(error)} in one request")
        except PayloadDecodeError as error:
            return answer(request, 400, _one_line(error))
        return cors(request, Response(_payloads_json(converted), media_type="application/json"))

    methods = ["GET", "HEAD", "POST", "OPTIONS", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", endpoint, methods=methods)])


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_payloads(body: bytes) -> Payloads:
    """``body`` as a ``Payloads`` message, its base64 checked strictly (protobuf's parser would skip
    characters outside the alphabet and read ``!!!!`` as empty data). Raises :class:`NotPayloads`,
    :class:`TooManyPayloads`."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise NotPayloads(type(error).__name__ if isinstance(error, RecursionError) else error) from None
    listed = document.get("payloads") if isinstance(document, dict) else None
    if isinstance(listed, list):
        if len(listed) > MAX_PAYLOADS:
            raise TooManyPayloads
        for index, payload in enumerate(listed):
            _check_base64(payload, index)
    try:
        return json_format.ParseDict(document, Payloads())
    except (json_format.ParseError, TypeError, ValueError, RecursionError) as error:
        raise NotPayloads(type(error).__name__ if isinstance(error, RecursionError) else error) from None


def _check_base64(payload: Any, index: int) -> None:
    if not isinstance(payload, dict):
        return  # ParseDict says what is wrong with it
    fields = [("data", payload.get("data"))]
    metadata = payload.get("metadata")
    if isinstance(metadata, dict):
        fields += [(f"metadata.{str(key)[:40]}", value) for key, value in metadata.items()]
    for name, value in fields:
        if isinstance(value, str) and not _is_base64(value):
            raise NotPayloads(f"payloads[{index}].{name} is not base64")


def _is_base64(text: str) -> bool:
    """Standard or URL-safe base64, padded or not (what protobuf JSON accepts), and nothing else."""
    core = text.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        b64decode(core + "=" * (-len(core) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _payloads_json(payloads: list[Payload]) -> bytes:
    """``payloads`` as a ``Payloads`` message in protobuf JSON, one payload at a time, each released once
    written (the whole message converted at once held it about three times over)."""
    parts: list[bytes] = []
    payloads.reverse()
    while payloads:
        parts.append(json_format.MessageToJson(payloads.pop(), indent=None).encode())
    return b'{"payloads": [' + b", ".join(parts) + b"]}"


def _not_allowed(allow: str) -> Response:
    return PlainTextResponse("method not allowed\n", status_code=405, headers={"Allow": allow})


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())
