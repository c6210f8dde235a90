"""What ``worker.py`` and ``starter.py`` refuse at start: one line on stderr naming the setting and the
fix, exit 2 for a configuration problem and 5 for a Temporal server that cannot be reached, never 1
and never a traceback. Every process here is real (a subprocess with the environment set); no
Temporal server is needed: each refusal comes before the first connection (the Temporal address is
a closed port, so a check that did not run would end in "cannot reach Temporal" instead).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cli.exit_codes import ExitCode
from tests.conftest import DemoKeys

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = ("TEMPORAL_", "OTEL_", "SUPPORT_", "OPENAI_", "DEEPSEEK_", "COMMERCE_MCP_URL")


def closed_address() -> str:
    """A local address nothing listens on (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def run(script: str, state_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run_into(None, script, state_dir, list(args), env)


def run_into(
    stdout: int | None, script: str, state_dir: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess:
    """``script`` with ``args`` and ``env`` over a cleaned environment; its stdout to the descriptor
    ``stdout`` (else captured)."""
    base = {key: value for key, value in os.environ.items() if not key.startswith(FOREIGN)}
    base.update({"TEMPORAL_ADDRESS": closed_address(), "COLUMNS": "200"})
    base.update(env)
    command = [sys.executable, str(ROOT / script), "--state-dir", str(state_dir), *args]
    return subprocess.run(
        command,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env=base,
        cwd=ROOT,
    )


def refusal(result: subprocess.CompletedProcess, code: int = ExitCode.REFUSED) -> str:
    """The one line on stderr of a run that ended with ``code``."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.returncode == code, (result.returncode, result.stderr)
    return lines[0]


@pytest.fixture
def state_dir(tmp_path: Path, demo_keys: DemoKeys) -> Path:
    return tmp_path / "state"


def worker(state_dir: Path, demo_keys: DemoKeys, **env: str) -> subprocess.CompletedProcess:
    return run("worker.py", state_dir, **{"SUPPORT_DIRECTORY": str(demo_keys.directory_path), **env})


# --- the worker's directory --------------------------------------------------------------------------


def test_a_missing_directory_is_refused_before_the_worker_connects(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_DIRECTORY=str(state_dir / "nowhere.json")))
    assert line.startswith("worker: configuration error: directory_missing: SUPPORT_DIRECTORY=")
    assert "nowhere.json" in line


def test_a_plain_http_directory_is_refused(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_DIRECTORY="http://keys.example.com/directory.json"))
    assert line.startswith("worker: configuration error: directory_insecure: SUPPORT_DIRECTORY=http://")
    assert "https" in line


def test_an_unreachable_directory_is_refused(state_dir: Path, demo_keys: DemoKeys) -> None:
    url = f"https://{closed_address()}/directory.json"
    line = refusal(worker(state_dir, demo_keys, SUPPORT_DIRECTORY=url))
    assert line.startswith(f"worker: configuration error: directory_unreadable: SUPPORT_DIRECTORY={url}")


def test_a_directory_holding_a_private_key_is_refused(state_dir: Path, tmp_path: Path, demo_keys: DemoKeys) -> None:
    document = json.loads(demo_keys.directory_path.read_text(encoding="utf-8"))
    document["keys"][0]["d"] = "nEe1T2nK0tiLwPqFHBcOGmfGx1CI0ymbFLkcZvnBpL4"
    leaked = tmp_path / "leaked.json"
    leaked.write_text(json.dumps(document), encoding="utf-8")
    line = refusal(worker(state_dir, demo_keys, SUPPORT_DIRECTORY=str(leaked)))
    assert line.startswith("worker: configuration error: directory_invalid: SUPPORT_DIRECTORY=")
    assert "private key" in line


def test_a_directory_without_an_issuer_key_is_refused(state_dir: Path, tmp_path: Path, demo_keys: DemoKeys) -> None:
    """No issuer key and no outside issuer: no applicant token could ever verify (check_directory's
    docstring promises this refusal)."""
    empty = tmp_path / "empty.json"
    empty.write_text('{"keys": []}', encoding="utf-8")
    line = refusal(worker(state_dir, demo_keys, SUPPORT_DIRECTORY=str(empty)))
    assert line.startswith("worker: configuration error: directory_")
    assert "SUPPORT_DIRECTORY=" in line and "issuer" in line


# --- the worker's other settings ---------------------------------------------------------------------


def test_the_worker_without_a_temporal_server_exits_unavailable(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys), ExitCode.UNAVAILABLE)
    assert line.startswith("worker: unavailable: temporal_unavailable: cannot reach Temporal at 127.0.0.1:")


def test_a_model_timeout_of_zero_is_refused_without_a_provider(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_MODEL_TIMEOUT_SECONDS="0"))
    assert line.startswith("worker: configuration error: invalid_model_timeout: SUPPORT_MODEL_TIMEOUT_SECONDS")


def test_a_bad_sampling_setting_is_one_configuration_error_line(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_MODEL_TEMPERATURE_COMPOSE="hot"))
    assert line == (
        "worker: configuration error: invalid_model_temperature: SUPPORT_MODEL_TEMPERATURE_COMPOSE must be a "
        "number from 0 to 2, or 'default' to send none."
    )


def test_an_unknown_log_level_is_refused(state_dir: Path, demo_keys: DemoKeys) -> None:
    line = refusal(worker(state_dir, demo_keys, SUPPORT_LOG_LEVEL="chatty"))
    assert line.startswith("worker: configuration error: invalid_log_level: SUPPORT_LOG_LEVEL='CHATTY'")


@pytest.mark.parametrize("endpoint", ["not a url", "localhost:4318", "http://:4318", "http://collector:port"])
def test_a_malformed_otlp_endpoint_is_refused_by_worker_and_starter(
    state_dir: Path, demo_keys: DemoKeys, endpoint: str
) -> None:
    line = refusal(worker(state_dir, demo_keys, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert line.startswith("worker: configuration error: tracing_config: OTEL_EXPORTER_OTLP_ENDPOINT=")
    line = refusal(run("starter.py", state_dir, "status", "x", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert line.startswith("error: tracing_config: OTEL_EXPORTER_OTLP_ENDPOINT=") and "http://" in line


# --- Temporal's client configuration, for both -------------------------------------------------------


def test_a_missing_client_certificate_is_named(state_dir: Path, demo_keys: DemoKeys) -> None:
    missing = {
        "TEMPORAL_TLS_CLIENT_CERT_PATH": str(state_dir / "client.pem"),
        "TEMPORAL_TLS_CLIENT_KEY_PATH": str(state_dir / "client.key"),
    }
    line = refusal(run("starter.py", state_dir, "status", "x", **missing))
    assert line.startswith("error: temporal_tls_file: TEMPORAL_TLS_CLIENT_CERT_PATH=")
    line = refusal(worker(state_dir, demo_keys, **missing))
    assert line.startswith("worker: configuration error: temporal_tls_file: TEMPORAL_TLS_CLIENT_CERT_PATH=")


def test_a_config_file_that_is_not_toml_is_one_line(state_dir: Path, tmp_path: Path, demo_keys: DemoKeys) -> None:
    config = tmp_path / "temporal.toml"
    config.write_text("this is [[ not toml\n", encoding="utf-8")
    line = refusal(run("starter.py", state_dir, "status", "x", TEMPORAL_CONFIG_FILE=str(config)))
    assert line.startswith("error: temporal_config: ") and f"TEMPORAL_CONFIG_FILE={config}" in line
    line = refusal(worker(state_dir, demo_keys, TEMPORAL_CONFIG_FILE=str(config)))
    assert line.startswith("worker: configuration error: temporal_config: ")


# --- starter.py's command line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (
            ["--profile", "chen", "review-info", "abc", "--profile", "lin"],
            "--profile chen --profile lin review-info abc",
        ),
        (["status", "abc", "--profile=chen"], "--profile=chen status abc"),
        (["status", "abc", "--state-dir", "/tmp/s t"], "--state-dir '/tmp/s t' status abc"),
    ],
)
def test_a_global_option_after_the_command_gets_the_command_as_it_must_be_typed(
    state_dir: Path, args: list[str], fixed: str
) -> None:
    line = refusal(run("starter.py", state_dir, *args))
    option = next(arg for arg in args[2:] if arg.startswith("--")).split("=")[0]
    assert line == f"error: put {option} before the command: starter.py --state-dir {state_dir} {fixed}"


def test_review_with_a_digest_missing_names_the_digest(state_dir: Path) -> None:
    line = refusal(run("starter.py", state_dir, "--profile", "chen", "review", "abc", "--digest", "--approve"))
    assert line.startswith("error: digest_missing: --digest has no value (--approve was read as the digest)")
    line = refusal(run("starter.py", state_dir, "--profile", "chen", "review", "abc", "--digest", "12ab", "--approve"))
    assert line.startswith("error: invalid_digest: ")
    line = refusal(run("starter.py", state_dir, "--profile", "chen", "review", "abc", "--digest", "a" * 64))
    assert line.startswith("error: invalid_arguments: give exactly one of --approve or --reject")


def test_a_reader_that_leaves_early_ends_the_command_quietly_with_0(state_dir: Path) -> None:
    history = ROOT / "tests" / "histories" / "v0.1" / "approved_refund.json"
    case_id = "x"
    for event in json.loads(history.read_text(encoding="utf-8"))["events"][:1]:
        attributes = event["workflowExecutionStartedEventAttributes"]
        case_id = attributes["workflowId"].removeprefix("case-")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write is a broken pipe
    try:
        result = run_into(write, "starter.py", state_dir, ["audit", case_id, "--history", str(history)], {})
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (0, "")
