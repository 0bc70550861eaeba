"""Framework agents (LangGraph, Agent Framework, pydantic-ai) recorded and replayed."""
