"""A unit-converting assistant on LangGraph, served over AG-UI by ag-ui-langgraph."""
