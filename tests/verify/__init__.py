"""The ordering verifier, its hints, and agreement with the reference TypeScript client."""
