"""`orderlab hooks FAMILY`: a model family's hook points (or the attention stack's: `stack`) with their shapes,
whether a user's function may write each, and their TransformerLens and nnsight names, as data
(measure/hook_listing.py finds them; report/command_output.hooks_lines draws them)."""

from __future__ import annotations

from orderlab.measure.hook_listing import HookListing, hook_listing


def hook_points(family: str) -> HookListing:
    """The points of `family` (or `stack`); OrderlabError (one line) for a name that is neither."""
    return hook_listing(family)
