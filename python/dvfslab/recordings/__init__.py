"""Recordings of real benchmark runs, and the check of a model against one
(`dvfslab model check`, docs/recording.md)."""

from dvfslab.recordings.manifest import Recording, load_recording, shipped_recordings

__all__ = ["Recording", "load_recording", "shipped_recordings"]
