"""Demo keys on disk: private keys for their owner only, a public key set that holds no private key."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from contracts.errors import ConfigurationError
from keystore import (
    DEMO_SIGNERS,
    create_demo_keys,
    keys_dir,
    load_private_key,
    load_public_keys,
    private_key_path,
    public_keys_location,
)


def test_init_creates_owner_only_private_keys_and_a_public_set(tmp_path: Path) -> None:
    assert create_demo_keys(tmp_path) == DEMO_SIGNERS
    assert stat.S_IMODE(keys_dir(tmp_path).stat().st_mode) == 0o700
    for kid in DEMO_SIGNERS:
        assert stat.S_IMODE(private_key_path(tmp_path, kid).stat().st_mode) == 0o600
    keys = load_public_keys(public_keys_location(tmp_path, {}))
    assert keys.kids() == DEMO_SIGNERS
    assert all("d" not in key for key in keys.keys)


def test_init_keeps_existing_keys(tmp_path: Path) -> None:
    create_demo_keys(tmp_path)
    before = private_key_path(tmp_path, "issuer").read_bytes()
    assert create_demo_keys(tmp_path) == []
    assert private_key_path(tmp_path, "issuer").read_bytes() == before


def test_a_private_key_others_can_read_is_refused(tmp_path: Path) -> None:
    create_demo_keys(tmp_path)
    path = private_key_path(tmp_path, "reviewer:chen")
    path.chmod(0o644)
    with pytest.raises(ConfigurationError) as caught:
        load_private_key(path)
    assert caught.value.code == "signing_key_exposed"


def test_a_public_key_set_with_a_private_key_is_refused(tmp_path: Path) -> None:
    leaky = tmp_path / "jwks.json"
    leaky.write_text(json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA", "d": "AA", "kid": "x"}]}))
    with pytest.raises(ConfigurationError) as caught:
        load_public_keys(str(leaky))
    assert caught.value.code == "public_keys_hold_a_private_key"


@pytest.mark.parametrize(("content", "code"), [(None, "public_keys_missing"), ("[]", "public_keys_malformed")])
def test_missing_or_malformed_public_keys_are_one_clear_error(tmp_path: Path, content: str | None, code: str) -> None:
    path = tmp_path / "jwks.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigurationError) as caught:
        load_public_keys(str(path))
    assert caught.value.code == code


def test_the_environment_names_the_public_key_set(tmp_path: Path) -> None:
    assert public_keys_location(tmp_path, {"SUPPORT_PUBLIC_KEYS": "https://keys.example/jwks.json"}) == (
        "https://keys.example/jwks.json"
    )
