"""A Google ADK agent (an ``LlmAgent`` on Gemini with one tool), served by ag-ui-adk."""
