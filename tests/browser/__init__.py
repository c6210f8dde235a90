"""The Temporal Web UI, driven in a real (headless) browser: what a reviewer sees and does there."""
