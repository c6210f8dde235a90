"""The worker's runtime around every activity: its boundary, its counters and its start-up checks.

The interceptor every activity crosses (:mod:`.boundary`), the counters activities record
(:mod:`.activity_metrics`) and the series known at start (:mod:`.known_series`), the Prometheus
endpoint (:mod:`.metrics_runtime`), and what a worker checks before it polls (:mod:`.startup_checks`).
"""
