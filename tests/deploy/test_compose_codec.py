"""The compose file's codec server (docs/payloads.md), checked statically: the Web UI is pointed at it,
it listens on the host's loopback only, and its CORS origins are the UI's, under any host ports."""

from __future__ import annotations

from typing import Any

from codec_server.__main__ import parse_args
from tests.deploy.compose_model import environment, interpolate, services


def _resolved(value: str, env: dict[str, str]) -> str:
    return interpolate(value, env)


def test_the_ui_decodes_through_the_codec_service_published_on_loopback(compose: dict[str, Any]) -> None:
    for env in ({}, {"CODEC_HOST_PORT": "18089", "TEMPORAL_UI_HOST_PORT": "18080"}):
        codec, ui = services(compose)["codec"], services(compose)["temporal-ui"]
        ports = [_resolved(port, env) for port in codec["ports"]]
        host_port = env.get("CODEC_HOST_PORT", "8089")
        assert ports == [f"127.0.0.1:{host_port}:8089"], "the codec server decodes anything: loopback only"
        assert _resolved(environment(ui)["TEMPORAL_CODEC_ENDPOINT"], env) == f"http://localhost:{host_port}"

        argv = [_resolved(str(part), env) for part in codec["command"]]
        assert argv[:3] == ["python", "-m", "codec_server"]
        args = parse_args(argv[3:])  # the server's own parser accepts them
        assert (args.host, args.port) == ("0.0.0.0", 8089)
        ui_port = env.get("TEMPORAL_UI_HOST_PORT", "8080")
        assert set(args.cors_origins) == {f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}"}


def test_the_codec_health_check_asks_its_health_route(compose: dict[str, Any]) -> None:
    script = services(compose)["codec"]["healthcheck"]["test"][3]
    assert "http://127.0.0.1:8089/health" in script
