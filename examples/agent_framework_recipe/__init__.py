"""Seed 003's recipe agent on Microsoft Agent Framework, served by agent-framework-ag-ui."""
