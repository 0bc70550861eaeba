"""Fake model providers that stream chunk by chunk in the real OpenAI and Anthropic formats."""
