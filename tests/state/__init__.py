"""JSON Patch, the StateManager and the state strategies."""
