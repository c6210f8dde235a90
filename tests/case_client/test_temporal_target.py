"""Where the service connects: Temporal's environment configuration, read by ``TemporalTarget.from_env``."""

from __future__ import annotations

from pathlib import Path

from case_client import TemporalTarget
from contracts.names import TASK_QUEUE


def test_nothing_set_keeps_the_local_defaults(tmp_path: Path) -> None:
    target = TemporalTarget.from_env({"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")})
    assert (target.address, target.namespace, target.task_queue) == ("localhost:7233", "default", TASK_QUEUE)
    assert "tls" not in target.connect_options and "api_key" not in target.connect_options


def test_cloud_settings_come_through(tmp_path: Path) -> None:
    target = TemporalTarget.from_env(
        {
            "TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml"),
            "TEMPORAL_ADDRESS": "support.a1b2c.tmprl.cloud:7233",
            "TEMPORAL_NAMESPACE": "support.a1b2c",
            "TEMPORAL_API_KEY": "key-from-the-environment",
            "SUPPORT_TASK_QUEUE": "support-cases-eu",
        }
    )
    assert (target.address, target.namespace, target.task_queue) == (
        "support.a1b2c.tmprl.cloud:7233",
        "support.a1b2c",
        "support-cases-eu",
    )
    assert target.connect_options["api_key"] == "key-from-the-environment"
    assert target.connect_options["tls"], "an API key turns TLS on"
    assert "key-from-the-environment" not in repr(target)


def test_empty_variables_count_as_unset(tmp_path: Path) -> None:
    """What an env file or a compose file passes through when nothing is set: empty strings. Without
    the filter an empty API key turns TLS on and an empty certificate path names a directory."""
    empty = {
        name: ""
        for name in (
            "TEMPORAL_ADDRESS",
            "TEMPORAL_NAMESPACE",
            "TEMPORAL_API_KEY",
            "TEMPORAL_TLS",
            "TEMPORAL_TLS_CLIENT_CERT_PATH",
            "TEMPORAL_TLS_CLIENT_KEY_PATH",
        )
    }
    target = TemporalTarget.from_env({"TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml"), **empty})
    assert (target.address, target.namespace) == ("localhost:7233", "default")
    assert "tls" not in target.connect_options and "api_key" not in target.connect_options
