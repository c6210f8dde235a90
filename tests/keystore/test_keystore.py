"""Demo keys on disk: private keys for their owner only, a directory that holds no private key."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from contracts.errors import ConfigurationError
from keystore import (
    create_demo_directory,
    directory_location,
    keys_dir,
    load_directory,
    load_private_key,
    private_key_path,
    reviewer_kid,
)

DEMO_KIDS = ["issuer", "commerce", reviewer_kid("chen"), reviewer_kid("mei")]


def test_init_creates_owner_only_private_keys_and_a_public_directory(tmp_path: Path) -> None:
    assert create_demo_directory(tmp_path) == DEMO_KIDS
    assert stat.S_IMODE(keys_dir(tmp_path).stat().st_mode) == 0o700
    for kid in DEMO_KIDS:
        assert stat.S_IMODE(private_key_path(tmp_path, kid).stat().st_mode) == 0o600
    directory = load_directory(directory_location(tmp_path, {}))
    assert [str(key["kid"]) for key in directory.keys] == DEMO_KIDS
    assert all("d" not in key for key in directory.keys)
    chen = directory.person("chen")
    assert chen is not None and chen.kids == [reviewer_kid("chen")]


def test_init_keeps_existing_keys(tmp_path: Path) -> None:
    create_demo_directory(tmp_path)
    before = private_key_path(tmp_path, "issuer").read_bytes()
    assert create_demo_directory(tmp_path) == []
    assert private_key_path(tmp_path, "issuer").read_bytes() == before


def test_a_private_key_others_can_read_is_refused(tmp_path: Path) -> None:
    create_demo_directory(tmp_path)
    path = private_key_path(tmp_path, "reviewer:chen")
    path.chmod(0o644)
    with pytest.raises(ConfigurationError) as caught:
        load_private_key(path)
    assert caught.value.code == "signing_key_exposed"


def test_a_directory_with_a_private_key_is_refused(tmp_path: Path) -> None:
    leaky = tmp_path / "directory.json"
    leaky.write_text(json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA", "d": "AA", "kid": "x"}]}))
    with pytest.raises(ConfigurationError) as caught:
        load_directory(str(leaky))
    assert caught.value.code == "directory_invalid"
    assert "private key" in caught.value.message


@pytest.mark.parametrize(("content", "code"), [(None, "directory_missing"), ("[]", "directory_invalid")])
def test_missing_or_malformed_directory_is_one_clear_error(tmp_path: Path, content: str | None, code: str) -> None:
    path = tmp_path / "directory.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigurationError) as caught:
        load_directory(str(path))
    assert caught.value.code == code
    assert "\n" not in caught.value.message


def test_the_environment_names_the_directory(tmp_path: Path) -> None:
    assert directory_location(tmp_path, {"SUPPORT_DIRECTORY": "https://keys.example/directory.json"}) == (
        "https://keys.example/directory.json"
    )
    assert directory_location(tmp_path, {}) == str(keys_dir(tmp_path) / "directory.json")
