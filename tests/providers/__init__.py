"""Fake providers, the recorder, wire formats and the HTTP libraries they serve."""
