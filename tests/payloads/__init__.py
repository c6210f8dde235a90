"""The case payload codec (contracts/payload_codec.py), the codec server (codec_server/) and a real
case's compressed history read back by the auditor, the codec server and the Temporal CLI."""
