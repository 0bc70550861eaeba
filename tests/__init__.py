"""Our test suite, by area; tests/support holds the helpers several areas share."""
