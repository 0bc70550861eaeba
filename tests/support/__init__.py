"""Helpers several test areas share: corrupted streams, stand-in upstreams, JS packages."""
