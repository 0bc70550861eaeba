"""A workshop task board spoken over AG-UI: the seeds' ``examples/task-board`` in Python."""
