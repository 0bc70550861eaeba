"""A Strands agent on Bedrock with a ``requests`` tool and an MCP tool, served by ag-ui-strands."""
