"""The AG-UI server toolkit: run context, handles, driver, endpoint, predictive state."""
