"""A case as a conversation at the terminal, as a user runs it: the real ``starter.py`` (a subprocess)
against the test's Temporal dev server, a real worker and the commerce MCP server (the shared world).

``ask`` about a refund without an order id: the case asks which order and waits for the customer (exit
3, the question and the ``say`` command printed). ``say CASE "It is order QH-1001"``: the progress
lines as the case works, then its reply, ending with the proposal waiting for a reviewer. Another
customer's message is refused with its sentence and recorded as nothing. ``chat``, driven through
stdin, holds the same conversation in two lines and leaves the case going on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from cli.exit_codes import ExitCode
from contracts.case import CaseStatus, CaseView
from contracts.conversation import MessageRefusal, Speaker, refusal_sentence

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "I want a refund for my lamp"
ANSWER = "It is order QH-1001"


async def _starter(world, temporal_server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": world.task_queue}
    env["COLUMNS"] = "200"
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY"):
        env.pop(name, None)
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(world.state_dir), *args]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=150, env=env, input=stdin
    )


def _case_id(stdout: str) -> str:
    return stdout.split("case ", 1)[1].split()[0]


def _flat(stdout: str) -> str:
    """The output as one line: the sentences wrapped at 80 columns read whole."""
    return " ".join(line.strip() for line in stdout.splitlines())


def _progress(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("… ")]


async def _status(world, case_id: str) -> CaseView:
    return await world.client.get_workflow_handle(f"case-{case_id}").query("status", result_type=CaseView)


async def test_ask_waits_for_the_customer_and_say_carries_the_case_to_a_reviewer(shared_world, temporal_server) -> None:
    asked = await _starter(shared_world, temporal_server, "--profile", "alice", "ask", QUESTION)
    assert asked.returncode == ExitCode.NEEDS_PERSON, asked.stdout + asked.stderr
    case_id = _case_id(asked.stdout)
    status = "waiting_customer (more_input_needed): the service asked the customer a question"
    assert status in " ".join(asked.stdout.split())
    question = next(line for line in asked.stdout.splitlines() if line.startswith("service: "))
    assert len(question) > len("service: ")
    assert f'--profile alice say {case_id} "…"' in asked.stdout and f"chat --case {case_id}" in asked.stdout

    said = await _starter(shared_world, temporal_server, "--profile", "alice", "say", case_id, ANSWER)
    assert said.returncode == ExitCode.DECIDED, said.stdout + said.stderr
    lines = said.stdout.splitlines()
    progress = _progress(said.stdout)
    assert progress[0] == "… Message received." and "… Reading order QH-1001." in progress
    assert any(line.startswith("… Waiting for a reviewer") for line in progress)
    reply = next(n for n, line in enumerate(lines) if line.startswith("service: "))
    assert all(lines.index(line) < reply for line in progress)  # progress first, then the reply
    assert _flat(said.stdout).endswith(
        f"Case {case_id}: a proposal waits for approval; nothing is paid or changed before it is approved. "
        'You can still write: ask for news, or write "withdraw" to withdraw the request.'
    )
    assert all(len(line) <= 80 for line in lines)

    view = await _status(shared_world, case_id)
    assert view.status is CaseStatus.WAITING_APPROVAL and view.order_id == "QH-1001"
    customer = [entry.text for entry in view.conversation if entry.speaker is Speaker.CUSTOMER]
    assert customer == [QUESTION, ANSWER]

    # another customer's message: the case's sentence, exit 2, and nothing of it is kept
    foreign = await _starter(shared_world, temporal_server, "--profile", "alice", "say", case_id, "hi", "--as", "bob")
    assert foreign.returncode == ExitCode.REFUSED and foreign.stdout == "", foreign.stdout + foreign.stderr
    [line] = foreign.stderr.strip().splitlines()
    assert line == f"error: message_refused: {refusal_sentence(MessageRefusal.ANOTHER_CUSTOMER)}"
    after = await _status(shared_world, case_id)
    assert [entry.text for entry in after.conversation] == [entry.text for entry in view.conversation]

    # the customer withdraws before anyone approves: the case ends, nothing paid (exit 0, a decision)
    withdrawn = await _starter(shared_world, temporal_server, "--profile", "alice", "say", case_id, "withdraw")
    assert withdrawn.returncode == ExitCode.DECIDED, withdrawn.stdout + withdrawn.stderr
    assert _flat(withdrawn.stdout).endswith(
        f"Case {case_id} has ended: the customer withdrew the request before anyone approved it; nothing was paid."
    )
    closed = await _starter(shared_world, temporal_server, "--profile", "alice", "say", case_id, "hello?")
    assert closed.returncode == ExitCode.REFUSED and refusal_sentence(MessageRefusal.CASE_CLOSED) in closed.stderr


async def test_say_to_a_case_that_is_not_there_is_one_line(shared_world, temporal_server) -> None:
    missing = await _starter(shared_world, temporal_server, "--profile", "alice", "say", "no-such-case", "hello")
    assert missing.returncode == ExitCode.REFUSED
    assert missing.stderr == "error: case_not_accessible: No such case is available to this profile.\n"


async def test_chat_holds_a_conversation_from_stdin_and_leaves_the_case_going_on(shared_world, temporal_server) -> None:
    chat = await _starter(shared_world, temporal_server, "--profile", "alice", "chat", stdin=f"{QUESTION}\n{ANSWER}\n")
    assert chat.returncode == ExitCode.DECIDED, chat.stdout + chat.stderr
    assert "Traceback" not in chat.stderr
    lines = chat.stdout.splitlines()
    assert lines[0].startswith("Chat as alice (qinghe).")
    started = next(line for line in lines if line.startswith("Case ") and line.endswith(" started."))
    case_id = started.removeprefix("Case ").removesuffix(" started.")
    assert f"Case {case_id} waits for your answer" in chat.stdout  # the first reply asked something
    assert "… Reading order QH-1001." in _progress(chat.stdout)
    assert f"Case {case_id}: a proposal waits for approval" in chat.stdout
    assert lines[-4:] == [
        f"Case {case_id} goes on without this chat.",
        "Continue it with:",
        f'  {lines[-2].strip().split(" say ")[0]} say {case_id} "…"',
        f"  {lines[-2].strip().split(' say ')[0]} chat --case {case_id}",
    ]
    assert (await _status(shared_world, case_id)).status is CaseStatus.WAITING_APPROVAL


def _with_ctrl_c(command: list[str]) -> list[str]:
    """``command`` with SIGINT at its default, as in a terminal's foreground (a process started in the
    background of a non-interactive shell inherits it ignored: Ctrl-C would then test nothing)."""
    reset = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    return [sys.executable, "-c", reset, *command]


async def test_ctrl_c_ends_a_chat_and_says_how_to_carry_the_case_on(shared_world, temporal_server) -> None:
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_server.address, "SUPPORT_TASK_QUEUE": shared_world.task_queue}
    command = [sys.executable, str(ROOT / "starter.py"), "--state-dir", str(shared_world.state_dir), "chat"]
    process = await asyncio.create_subprocess_exec(
        *_with_ctrl_c(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env, "COLUMNS": "200"},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(f"{QUESTION}\n".encode())
    await process.stdin.drain()
    seen: list[str] = []
    try:
        while not any(line.startswith("Case ") and "waits for your answer" in line for line in seen):
            line = await asyncio.wait_for(process.stdout.readline(), timeout=120)
            assert line, f"chat ended before the case asked back: {seen}"
            seen.append(line.decode().rstrip("\n"))
        process.send_signal(signal.SIGINT)  # the chat now waits for the next line
        rest, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    except BaseException:
        process.kill()
        raise
    assert process.returncode == ExitCode.INTERRUPTED, stderr.decode()
    assert "Traceback" not in stderr.decode() and "Interrupted" in stderr.decode()
    case_id = next(line for line in seen if line.endswith(" started.")).split()[1]
    goodbye = rest.decode().splitlines()
    assert goodbye[0] == f"Case {case_id} goes on without this chat." and f"say {case_id} " in goodbye[2]
    assert (await _status(shared_world, case_id)).status is CaseStatus.WAITING_CUSTOMER
