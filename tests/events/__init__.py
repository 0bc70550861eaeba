"""Events, SSE, ids, assertions and snapshots."""
