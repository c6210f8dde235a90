"""The metrics part of docker-compose.yml, checked statically: Prometheus scrapes the ports the worker
and the commerce service are told to serve on, its rule file is the one under deploy/, Grafana is
provisioned with that Prometheus and the committed dashboard, and every alert is documented.

Whether the metric names the rules and the dashboard query are exported is checked against real
scrapes in tests/metrics/test_exported_metrics.py."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.deploy.compose_model import ROOT, environment, services

PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DATASOURCE = ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARDS = ROOT / "deploy" / "grafana" / "provisioning" / "dashboards" / "support.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "support-cases.json"
OPERATIONS = ROOT / "docs" / "operations.md"


def _yaml(path: Any) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _scraped(job: str) -> tuple[list[str], int]:
    [config] = [c for c in _yaml(PROMETHEUS)["scrape_configs"] if c["job_name"] == job]
    [sd] = config["dns_sd_configs"]
    return sd["names"], sd["port"]


def test_prometheus_scrapes_the_ports_the_worker_and_commerce_serve_on(compose: dict[str, Any]) -> None:
    all_services = services(compose)
    worker, commerce = environment(all_services["worker"]), environment(all_services["commerce"])
    assert _scraped("worker") == (["worker"], int(worker["SUPPORT_METRICS_PORT"]))
    assert _scraped("commerce") == (["commerce"], int(commerce["COMMERCE_METRICS_PORT"]))
    assert worker["SUPPORT_METRICS_HOST"] == commerce["COMMERCE_METRICS_HOST"] == "0.0.0.0"
    assert worker["SUPPORT_METRICS_PORT"] in all_services["worker"]["expose"]
    assert commerce["COMMERCE_METRICS_PORT"] in all_services["commerce"]["expose"]
    assert "ports" not in all_services["worker"], "metrics stay inside the compose network"


def _config_files(compose: dict[str, Any], service: str) -> dict[str, str]:
    """``{target in the container: file in this checkout}`` of a service's compose configs."""
    declared = compose["configs"]
    return {item["target"]: declared[item["source"]]["file"] for item in services(compose)[service]["configs"]}


def test_prometheus_loads_the_committed_config_and_rules(compose: dict[str, Any]) -> None:
    files = _config_files(compose, "prometheus")
    assert files == {
        "/etc/prometheus/prometheus.yml": "./deploy/prometheus/prometheus.yml",
        "/etc/prometheus/alerts.yml": "./deploy/prometheus/alerts.yml",
    }
    assert _yaml(PROMETHEUS)["rule_files"] == ["/etc/prometheus/alerts.yml"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in services(compose)["prometheus"]["command"]
    assert services(compose)["prometheus"]["ports"] == ["127.0.0.1:${PROMETHEUS_HOST_PORT:-9090}:9090"]


def test_grafana_is_provisioned_with_prometheus_and_the_dashboard(compose: dict[str, Any]) -> None:
    files = _config_files(compose, "grafana")
    for target, source in files.items():
        assert (ROOT / source).is_file(), f"{target} comes from {source}, which does not exist"
    [datasource] = _yaml(DATASOURCE)["datasources"]
    assert datasource["url"] == "http://prometheus:9090"
    [provider] = _yaml(DASHBOARDS)["providers"]
    dashboard_path = provider["options"]["path"]
    assert files[f"{dashboard_path}/support-cases.json"] == "./deploy/grafana/dashboards/support-cases.json"
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    sources = {target["datasource"]["uid"] for panel in dashboard["panels"] for target in panel["targets"]}
    assert sources == {datasource["uid"]}
    assert services(compose)["grafana"]["ports"] == ["127.0.0.1:${GRAFANA_HOST_PORT:-3000}:3000"]


def test_every_alert_is_documented_with_what_to_do() -> None:
    rules = [rule for group in _yaml(ALERTS)["groups"] for rule in group["rules"]]
    names = [rule["alert"] for rule in rules]
    assert {"SupportNoWorkerPolling", "SupportCommerceDown", "SupportTaskQueueBacklog"} <= set(names)
    guide = OPERATIONS.read_text(encoding="utf-8")
    headings = [line for line in guide.splitlines() if line.startswith("### ")]
    for name in names:
        assert any(f"`{name}`" in heading for heading in headings), f"docs/operations.md has no section for {name}"
