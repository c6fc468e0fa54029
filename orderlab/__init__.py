"""orderlab: measure how much a transformer knows about word order, and where it loses it."""

__version__ = "0.1.0"

# The spec layer validates encoding names through a catalog that the encodings register on import
# (orderlab/spec/encoding_catalog.py): importing them here makes every use of orderlab see it.
import orderlab.encodings  # noqa: F401
