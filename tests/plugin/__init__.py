"""The pytest plugin, through real pytest runs (pytester)."""
