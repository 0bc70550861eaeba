"""The agui-replay command and its viewer."""
