"""``starter.py directory show`` on a directory it must refuse (issue 44): a key entry of another type or
another algorithm, and a path that is no regular file. Each is one ``directory: ...`` line naming the
problem, exit 2 (never "unexpected InvalidKeyError", exit 1, and never a hang). The commands run
in-process through typer's runner, as tests/cli/test_directory_commands.py runs them."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed448 import Ed448PrivateKey
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from pydantic import ValidationError
from typer.testing import CliRunner, Result

from cli.directory_commands import directory_app
from cli.exit_codes import ExitCode
from contracts.directory import Directory
from keystore import DIRECTORY_ENV, create_demo_directory, directory_location
from tests.directory_file_support import guard_endless_reads


@pytest.fixture(autouse=True)
def _own_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DIRECTORY_ENV, raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    create_demo_directory(tmp_path)
    return tmp_path


def _show(state_dir: Path) -> Result:
    return CliRunner().invoke(directory_app, ["show"], obj=SimpleNamespace(state_dir=state_dir))


def _refusal(result: Result) -> str:
    assert result.exit_code == ExitCode.REFUSED, (result.exit_code, result.stdout, result.stderr, result.exception)
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("directory: ")
    return line


def _rsa() -> dict[str, Any]:
    return RSAAlgorithm.to_jwk(
        rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key(), as_dict=True
    )


def _ec() -> dict[str, Any]:
    return ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1()).public_key(), as_dict=True)


def _ed448() -> dict[str, Any]:
    return OKPAlgorithm.to_jwk(Ed448PrivateKey.generate().public_key(), as_dict=True)


OTHER_KEYS = [
    pytest.param(_rsa, "RSA", id="rsa"),
    pytest.param(_ec, "EC", id="ec-p256"),
    pytest.param(_ed448, "Ed448", id="ed448"),
    pytest.param(lambda: {"kty": "oct", "k": "c2VjcmV0"}, "oct", id="shared-secret"),
    pytest.param(lambda: {"kty": "OKP", "crv": "X25519", "x": "AAAA"}, "X25519", id="x25519"),
    pytest.param(lambda: {"use": "sig"}, "no kty", id="no-kty"),
]


def _replace_key(state_dir: Path, kid: str, entry: dict[str, Any]) -> None:
    """The directory file with key ``kid``'s entry replaced by ``entry`` (same kid)."""
    path = Path(directory_location(state_dir, {}))
    document = json.loads(path.read_text(encoding="utf-8"))
    document["keys"] = [{**entry, "kid": kid} if key["kid"] == kid else key for key in document["keys"]]
    path.write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize(("make", "kind"), OTHER_KEYS)
def test_a_key_of_another_type_is_one_line_naming_it(state_dir: Path, make: Any, kind: str) -> None:
    _replace_key(state_dir, "reviewer:chen", make())
    line = _refusal(_show(state_dir))
    assert "key 'reviewer:chen' is not an Ed25519 public key" in line


@pytest.mark.parametrize("alg", ["none", "RS256", "ES256", "HS256", "", None, 7])
def test_a_key_entry_for_another_algorithm_is_refused_at_load(state_dir: Path, alg: object) -> None:
    """The entry's key is a good Ed25519 key; only its ``alg`` says otherwise. PyJWT is asked for EdDSA
    whatever the entry says, so before issue 44 the document loaded."""
    path = Path(directory_location(state_dir, {}))
    document = json.loads(path.read_text(encoding="utf-8"))
    chen = next(key for key in document["keys"] if key["kid"] == "reviewer:chen")
    _replace_key(state_dir, "reviewer:chen", {**chen, "alg": alg})
    line = _refusal(_show(state_dir))
    assert f"key 'reviewer:chen' is for algorithm {str(alg)!r}; the directory's keys are EdDSA only" in line


def test_a_key_entry_without_alg_and_one_with_eddsa_still_load(state_dir: Path) -> None:
    path = Path(directory_location(state_dir, {}))
    document = json.loads(path.read_text(encoding="utf-8"))
    for key in document["keys"]:
        key.pop("alg", None)
    document["keys"][0]["alg"] = "EdDSA"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = _show(state_dir)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(("make", "kind"), OTHER_KEYS)
def test_the_document_itself_refuses_another_key_type_as_a_validation_error(make: Any, kind: str) -> None:
    """The refusal is a pydantic ValidationError (what every reader catches), not a raised PyJWT error."""
    with pytest.raises(ValidationError, match="is not an Ed25519 public key"):
        Directory.model_validate({"keys": [{**make(), "kid": "other"}]})


def test_show_refuses_dev_zero_at_once(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/dev/zero`` never ends: it is refused for what it is before a byte is read (the guard and the
    bounded join make a regression fail here instead of reading forever)."""
    read_count = guard_endless_reads(monkeypatch)
    monkeypatch.setenv(DIRECTORY_ENV, "/dev/zero")
    results: list[Result] = []
    worker = threading.Thread(target=lambda: results.append(_show(state_dir)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert results, "directory show is still reading /dev/zero"
    line = _refusal(results[0])
    assert line == (
        "directory: The directory at /dev/zero is a character device, not a regular file; "
        "give the path of the directory JSON file."
    )
    assert read_count == [0]
