"""A case as a conversation at the terminal: ``say`` writes one more message to a case, ``chat`` holds a
conversation line by line. Registered on :data:`cli.app.app` when imported.

Both stand in for the login service as ``ask`` does: each message carries an applicant token for the
case, signed by the state dir's issuer key, for the person writing (``--as``, else ``--profile``); the
case itself decides whether that person may write to it (a refusal is its sentence, exit 2). Progress
lines come from the case's stream as they happen, then the reply; the exit status is ``ask``'s for the
status the case is in (:mod:`cli.exit_codes`).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import typer
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from case_client import CASE_NOT_ACCESSIBLE, CaseClient, CaseHandle, ClientErrorCode, MessageRefused, TemporalTarget
from case_client._conversation import awaited_confirmation, new_message_id, send_message
from case_client._following import WaitCode
from cli.app import WAIT_SECONDS, Settings, app, settings_of
from cli.codes import CliErrorCode
from cli.conversation_render import (
    after_turn_lines,
    continue_lines,
    plain,
    progress_line,
    reply_lines,
    sentence_lines,
    shows_as_progress,
)
from cli.conversation_text import Line, line, status_sentence
from cli.conversation_turns import LineReader, follow_turn
from cli.exit_codes import ExitCode, exit_code_for
from cli.render import errors, starter_command, worker_command
from contracts.case import TERMINAL_STATUSES
from contracts.conversation import (
    MAX_MESSAGE_CHARS,
    MIN_MESSAGE_INTERVAL_SECONDS,
    CustomerMessage,
    MessageAccepted,
    MessageRefusal,
    ProgressItem,
    Speaker,
    TurnReply,
    refusal_sentence,
    says_yes,
)
from contracts.errors import AuthorizationError, ContractError, SupportError, TransientError
from contracts.identity import Identity
from contracts.knowledge import Language, question_language
from contracts.names import case_id_of, workflow_id
from keystore.signers import KeyFileSigner

MAX_WAIT_SECONDS = 86400.0
PACING_SECONDS = MIN_MESSAGE_INTERVAL_SECONDS + 0.2
"""A chat sends a message no sooner than this after the case took its last one: a case refuses one that
comes within :data:`~contracts.conversation.MIN_MESSAGE_INTERVAL_SECONDS` (``too_frequent``), and lines
pasted or piped in come faster than that."""
FIRST_REPLY_WAIT_SECONDS = 1.0
"""The first message's Update-with-Start returns after this long at most: its progress is then shown
as it comes, like every later message's."""


def check_message(text: str) -> str:
    """The message without surrounding blanks, or one line saying what is wrong (nothing is sent)."""
    message = text.strip()
    if not message:
        raise ContractError(
            CliErrorCode.INVALID_MESSAGE, 'the message is empty; write something, e.g. "It is order QH-1001"'
        )
    if len(message) > MAX_MESSAGE_CHARS:
        sentence = refusal_sentence(MessageRefusal.TOO_LONG, question_language(message))
        raise ContractError(CliErrorCode.INVALID_MESSAGE, f"{sentence} ({len(message)} characters)")
    return message


def writer_of(settings: Settings, as_subject: str | None) -> Identity:
    """Who writes: ``--as SUBJECT`` (a person of the directory), else the ``--profile`` person."""
    if as_subject is None:
        return settings.identity
    from keystore import directory_location, load_directory

    return load_directory(directory_location(settings.state_dir)).identity(as_subject)


def _print(lines: list[str]) -> None:
    for text in lines:
        print(text, flush=True)  # plain print: nothing is read as markup


async def _case_language(case: CaseHandle, fallback: Language) -> Language:
    """The case's language (its conversation query); ``fallback`` when the case cannot say (a case of
    an earlier build, a busy worker). A case that does not exist is ``case_not_accessible``."""
    try:
        return (await case.conversation()).language
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE) from None
        return fallback
    except WorkflowQueryFailedError:
        return fallback


async def _offset_now(case: CaseHandle) -> int | None:
    """Where the case's progress stream stands now; None when it cannot be read (no progress shown)."""
    try:
        return await case.progress_offset()
    except (RPCError, WorkflowQueryFailedError):
        return None


class Turns:
    """Prints one turn after another for one writer: progress lines, the reply, what comes next."""

    def __init__(self, starter: str, language: Language, *, wait: float, in_chat: bool) -> None:
        self.starter = starter
        self.language = language
        self.wait = wait
        self.in_chat = in_chat

    def show(self, item: ProgressItem) -> None:
        if shows_as_progress(item):
            _print(progress_line(item))

    async def follow(self, case: CaseHandle, turn: int, offset: int | None) -> TurnReply:
        """Message ``turn`` followed to its reply, and the case as it was then."""
        answer, seen = await follow_turn(case, turn, offset, timeout=self.wait, show=self.show)
        if answer.reply is not None:
            _print(reply_lines(answer.reply, self.language))
        _print(after_turn_lines(answer, self.starter, self.language, until=seen.waiting_until, chat=self.in_chat))
        return answer


async def say_as_customer(
    case: CaseHandle, signer: KeyFileSigner, writer: Identity, message: str, *, token: str, language: Language
) -> MessageAccepted:
    """Send ``message`` under ``token``; a message that only says yes to an action proposal waiting for
    this customer goes with their confirmation, which the sign-in (here: the issuer key) signs over the
    digest of the proposal they were shown. Any other message, or yes with nothing waiting, is sent as is."""
    digest = awaited_confirmation(await case.status()) if says_yes(message) else None
    if digest is None:
        return await case.say(message, token=token, language=language)
    confirmation = signer.confirmation_token(writer, case_id=case.case_id, digest=digest)
    signed = CustomerMessage(text=message, token=token, message_id=new_message_id(), confirmation=confirmation)
    return await send_message(case.workflow, signed, language=language)


@app.command("say")
def say_to_case(
    ctx: typer.Context,
    case_id: Annotated[str, typer.Argument(metavar="CASE", help="The case to write to.")],
    text: Annotated[str, typer.Argument(metavar="TEXT", help=f"Your message (1-{MAX_MESSAGE_CHARS} characters).")],
    as_subject: Annotated[
        str | None, typer.Option("--as", help="Write as this person of the directory (default: --profile).")
    ] = None,
    wait: Annotated[
        float, typer.Option("--wait", min=0, max=MAX_WAIT_SECONDS, help="Seconds to wait for the reply.")
    ] = WAIT_SECONDS,
) -> None:
    """Write one more message to a case, signed for you, and show its progress and the reply (exit
    status as ask's for the case's status; a refused message: its sentence, exit 2)."""
    message = check_message(text)
    settings = settings_of(ctx)
    writer = writer_of(settings, as_subject)
    case_key = case_id_of(workflow_id(case_id))
    signer = KeyFileSigner(settings.state_dir)
    token = signer.applicant_token(writer, case_key)
    starter = starter_command(settings.state_dir, writer.subject)
    target = TemporalTarget.from_env()
    sent: list[str] = []

    async def run() -> ExitCode:
        cases = await CaseClient.connect(target)
        await cases.require_worker(start_hint=worker_command(settings.state_dir))
        case = cases.open(case_key)
        language = await _case_language(case, question_language(message))
        offset = await _offset_now(case)
        accepted = await say_as_customer(case, signer, writer, message, token=token, language=language)
        sent.append(case.case_id)
        turns = Turns(starter, language, wait=wait, in_chat=False)
        try:
            return exit_code_for((await turns.follow(case, accepted.turn, offset)).status)
        except TransientError as error:
            raise TransientError(error.code, f"{error.message}. {_follow_hint(starter, case.case_id)}") from None

    async def interruptible() -> ExitCode:
        try:
            return await run()
        except asyncio.CancelledError:
            if sent:
                errors.print(f"interrupted: your message was taken; {_follow_hint(starter, sent[0])}")
            else:
                errors.print("interrupted: your message may not have been sent")
            raise

    raise typer.Exit(asyncio.run(interruptible()))


def _follow_hint(starter: str, case_id: str) -> str:
    return f"case {case_id} goes on; follow it: {starter} status {case_id} --wait"


@app.command("chat")
def chat_at_terminal(
    ctx: typer.Context,
    as_subject: Annotated[
        str | None, typer.Option("--as", help="Write as this person of the directory (default: --profile).")
    ] = None,
    case_id: Annotated[str | None, typer.Option("--case", help="Carry on this case instead of starting one.")] = None,
    lang: Annotated[
        Language | None,
        typer.Option("--lang", help="Your language (default: your remembered preference, else your first message's)."),
    ] = None,
) -> None:
    """An interactive conversation: each line you write is a message (the first starts a case), its
    progress and the reply follow. An empty line, the end of input or Ctrl-C ends the chat; the case
    goes on."""
    from activities import LanguagePreferences

    settings = settings_of(ctx)
    writer = writer_of(settings, as_subject)
    signer = KeyFileSigner(settings.state_dir)
    remembered = LanguagePreferences(settings.state_dir).get(writer.subject)
    session = ChatSession(
        writer,
        signer,
        starter=starter_command(settings.state_dir, writer.subject),
        worker=worker_command(settings.state_dir),
        language=lang or remembered,
    )
    target = TemporalTarget.from_env()

    async def run() -> ExitCode:
        cases = await CaseClient.connect(target, issuer=signer.applicant_token)
        await cases.require_worker(start_hint=session.worker)
        resumed = [] if case_id is None else await session.resume(cases.open(case_id))
        opens = line(Line.CHAT_OPENS, session.language, subject=writer.subject, tenant=writer.tenant)
        _print([*sentence_lines(opens), *resumed])
        lines = LineReader(sys.stdin)
        try:
            while True:
                if sys.stdin.isatty():
                    print("> ", end="", flush=True)
                text = await lines.next()
                if text is None or not text.strip():
                    break
                await session.send(cases, text)
        except asyncio.CancelledError:
            errors.print(line(Line.INTERRUPTED, session.language))
            _print(session.goodbye())
            raise
        _print(session.goodbye())
        return ExitCode.DECIDED

    raise typer.Exit(asyncio.run(run()))


class ChatSession:
    """The case a chat writes to (None before its first message and after the case ends)."""

    def __init__(
        self,
        writer: Identity,
        signer: KeyFileSigner,
        *,
        starter: str,
        worker: str,
        language: Language | None,
        pacing: float = PACING_SECONDS,
    ) -> None:
        self.writer = writer
        self.pacing = pacing
        self.signer = signer
        self.starter = starter
        self.worker = worker
        self.chosen = language
        """The language asked for (``--lang`` or remembered); None: each case's own."""
        self.language = language or Language.EN
        self.case: CaseHandle | None = None
        self.started = False
        """Whether this chat has written to a case (a goodbye without one says so)."""
        self.taken_at: float | None = None
        """When the case last took a message of this chat (the event loop's clock)."""

    async def resume(self, case: CaseHandle) -> list[str]:
        """Carry on ``case`` if it is this writer's (in its language unless one was chosen): the lines
        that say where it stands and its last reply. One that has ended is said, and the next line starts
        a new case; someone else's case reads like a missing one."""
        try:
            view = await case.conversation()
        except RPCError as error:
            if error.status is RPCStatusCode.NOT_FOUND:
                raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE) from None
            raise TransientError(
                ClientErrorCode.CONVERSATION_UNREACHABLE, f"case {case.case_id} cannot be read: {error.message}"
            ) from None
        if (view.customer, view.tenant) != (self.writer.subject, self.writer.tenant):
            raise AuthorizationError(ClientErrorCode.CASE_NOT_ACCESSIBLE, CASE_NOT_ACCESSIBLE)
        self.language = self.chosen or view.language
        status = status_sentence(view.status, self.language)
        if view.status in TERMINAL_STATUSES:
            ended = line(Line.CASE_ENDED, self.language, case=case.case_id, status=status)
            return sentence_lines(ended, line(Line.NEXT_STARTS_NEW, self.language))
        self.case, self.started = case, True
        last = next((e for e in reversed(view.entries) if e.speaker is Speaker.SERVICE), None)
        lines = sentence_lines(line(Line.CHAT_CONTINUES, self.language, case=case.case_id, status=status))
        return lines + (reply_lines(last, self.language) if last is not None else [])

    async def send(self, cases: CaseClient, text: str) -> None:
        """One line of the chat: a message to the case (the first starts one), its progress and reply. A
        refusal or a failure is said, and the chat goes on."""
        try:
            message = check_message(text)
            if self.case is None:
                await self._start(cases, message)
            else:
                await self._write(self.case, message)
        except MessageRefused as refused:
            errors.print(line(Line.REFUSED, self.language, sentence=plain(str(refused.message))))
            if refused.refusal is MessageRefusal.CASE_CLOSED:
                self.case = None
                errors.print(line(Line.NEXT_STARTS_NEW, self.language))
        except TransientError as error:
            if self.case is not None and error.code == WaitCode.CASE_WORKING:
                waited = line(Line.NO_REPLY_YET, self.language, seconds=f"{WAIT_SECONDS:g}", case=self.case.case_id)
                _print(sentence_lines(waited))
            else:
                errors.print(f"error: {error}")
        except SupportError as error:
            errors.print(f"error: {error}")

    async def _start(self, cases: CaseClient, message: str) -> None:
        """A new case: in the chosen language, else the first case's (a later case of the same chat keeps
        it: "QH-1001" alone says nothing of a language), else the message's own."""
        if self.chosen is None and not self.started:
            self.language = question_language(message)
        language = self.chosen or (self.language if self.started else None)
        case, _ = await cases.converse(self.writer, message, language=language, wait_seconds=FIRST_REPLY_WAIT_SECONDS)
        self.case, self.taken_at = case, asyncio.get_running_loop().time()
        _print([line(Line.CASE_STARTED, self.language, case=case.case_id)])
        await self._follow(case, 1, 0)

    async def _write(self, case: CaseHandle, message: str) -> None:
        token = self.signer.applicant_token(self.writer, case.case_id)
        offset = await _offset_now(case)
        await self._paced()
        accepted = await say_as_customer(case, self.signer, self.writer, message, token=token, language=self.language)
        self.taken_at = asyncio.get_running_loop().time()
        await self._follow(case, accepted.turn, offset)

    async def _paced(self) -> None:
        """Wait out what is left of :attr:`pacing` (:data:`PACING_SECONDS`) since the case last took a message."""
        if self.taken_at is not None:
            left = self.taken_at + self.pacing - asyncio.get_running_loop().time()
            if left > 0:
                await asyncio.sleep(left)

    async def _follow(self, case: CaseHandle, turn: int, offset: int | None) -> None:
        self.started = True
        answer = await Turns(self.starter, self.language, wait=WAIT_SECONDS, in_chat=True).follow(case, turn, offset)
        if answer.status in TERMINAL_STATUSES:
            self.case = None

    def goodbye(self) -> list[str]:
        """What the chat says as it ends: the case that goes on and how to carry it on (an ended case was
        said when it ended), or that no case was started."""
        if self.case is None:
            return [] if self.started else [line(Line.NO_CASE, self.language)]
        left = line(Line.CHAT_LEFT, self.language, case=self.case.case_id)
        return [*sentence_lines(left), *continue_lines(self.case.case_id, self.starter, self.language)]
