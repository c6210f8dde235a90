"""The codec server: Temporal's remote codec protocol for the case payload codec.

Large payloads travel zlib-compressed (:mod:`contracts.payload_codec`); the Web UI and the Temporal CLI
show them decoded when pointed at this server (``--ui-codec-endpoint`` for the dev server's UI,
``TEMPORAL_CODEC_ENDPOINT`` for the UI image, ``--codec-endpoint`` for the CLI). Run it with
``python -m codec_server`` (``make codec-server``); docs/payloads.md says how and why.
"""

from codec_server.app import DEV_UI_ORIGINS, build_app

__all__ = ["DEV_UI_ORIGINS", "build_app"]
