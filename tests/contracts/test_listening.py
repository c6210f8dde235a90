"""contracts.listening: whether a server listens on loopback only, the one decision behind the
beyond-loopback warning of the codec server, the reviewer console and the worker's metrics endpoint."""

from __future__ import annotations

import pytest

from contracts.listening import beyond_loopback_warning, is_loopback_address, is_loopback_host, shown_host


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        *[("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("::ffff:127.0.0.1", True), ("localhost", True)],
        *[("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("", False), ("no-such-host.invalid", False)],
    ],
)
def test_a_host_is_loopback_only_when_every_address_it_names_is(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback
    assert is_loopback_address(host) is (loopback and host != "localhost")  # a name is not an address


def test_the_warning_is_one_line_in_the_codec_servers_words() -> None:
    line = beyond_loopback_warning("codec-server", shown_host("::"), "anyone can decode", "keep it local")
    assert line == "codec-server: warning: listening on [::], not only on loopback: anyone can decode; keep it local"
