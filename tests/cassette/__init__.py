"""Cassettes, stored recordings, normalization and scrubbing."""
