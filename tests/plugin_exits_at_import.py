"""A user's encoding module that calls sys.exit while it is imported (loaded by tests as a plugin)."""

import sys

sys.exit(3)
