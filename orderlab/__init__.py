"""orderlab: measure how much a transformer knows about word order, and where it loses it."""

__version__ = "0.1.0"
