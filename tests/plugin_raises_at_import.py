"""A user's encoding module that fails while it is imported (loaded by tests as a plugin)."""

raise RuntimeError("missing configuration file")
