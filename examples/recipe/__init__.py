"""Seed 003's recipe assistant: predictive state from streamed tool arguments, with confirmation."""
