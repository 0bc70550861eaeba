"""The recording session and its parts: record, replay, refresh, pending changes, faults."""
