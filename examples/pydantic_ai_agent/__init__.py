"""A packing assistant on pydantic-ai, served over AG-UI by pydantic-ai's own adapter."""
