"""The client-side Session."""
