"""The alert rules under Prometheus's own tools: ``promtool check rules``, ``promtool check config`` and
``promtool test rules`` on deploy/prometheus/tests/*.yml.

promtool is Debian's (``apt-get install prometheus``, the version the compose file's Prometheus is
checked against); ``make test`` installs it first (``make promtool``), as it installs chromium for the
browser tests. Every alert must have a rule test where it fires, one where it does not, and one where
it resolves: an evaluation with no alert after one where it fired, in the same test, so an alert that
keeps paging after its condition ended fails here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yml"
RULE_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
MISSING = (
    "promtool is missing: `make test` installs it (Debian's prometheus package, `make promtool`); "
    "here run `sudo make promtool` or `sudo apt-get install --no-install-recommends prometheus`"
)


def promtool(*args: str, cwd: Path = PROMETHEUS) -> subprocess.CompletedProcess[str]:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(MISSING, pytrace=False)
    return subprocess.run([found, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def alert_names() -> list[str]:
    groups = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return [rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule]


def test_promtool_accepts_the_rules() -> None:
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in done.stdout


def test_promtool_accepts_the_compose_prometheus_configuration(tmp_path: Path) -> None:
    """prometheus.yml as the compose file mounts it, its rule file path pointed at the repository's."""
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text(encoding="utf-8"))
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    config["rule_files"] = [str(RULES)]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    assert {"worker", "commerce", "temporal"} <= jobs


def test_every_rule_test_passes() -> None:
    assert RULE_TESTS, "no rule tests under deploy/prometheus/tests"
    done = promtool("test", "rules", *(str(path.relative_to(PROMETHEUS)) for path in RULE_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(RULE_TESTS), done.stdout


def test_every_alert_is_tested_firing_not_firing_and_resolving() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    resolves: set[str] = set()
    for path in RULE_TESTS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert document["rule_files"] == ["../alerts.yml"], path
        for case in document["tests"]:
            fired_before: set[str] = set()
            for check in sorted(case.get("alert_rule_test", []), key=lambda c: _seconds(c["eval_time"])):
                name = check["alertname"]
                if check.get("exp_alerts"):
                    fires.add(name)
                    fired_before.add(name)
                else:
                    quiet.add(name)
                    if name in fired_before:
                        resolves.add(name)
    alerts = set(alert_names())
    assert alerts == fires, f"never tested firing: {sorted(alerts - fires)}; unknown: {sorted(fires - alerts)}"
    assert alerts <= quiet, f"never tested not firing: {sorted(alerts - quiet)}"
    assert alerts <= resolves, f"never tested resolving after it fired: {sorted(alerts - resolves)}"


def _seconds(duration: str) -> int:
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0, ""
    for char in duration:
        if char.isdigit():
            number += char
        else:
            total += int(number) * units[char]
            number = ""
    return total
