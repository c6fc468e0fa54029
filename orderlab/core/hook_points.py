"""The names of the hook points a forward pass can hand back (TransformerLens's habit). Torch-free, so that
`orderlab models` lists them without loading a model.

A layer's point is named `hook_name(layer, point)` ('2.pattern': layer 2's attention probabilities); a whole pass's
point by its name alone. Each adapter says which points its model exposes (adapter_protocol.Adapter.hook_points).
"""

from __future__ import annotations

# The attention stack's, per layer: q and k after the encoding's rotation; scores scaled, biased and masked; normed
# only with norm: pre.
HOOK_POINTS = ("input", "normed", "q", "k", "v", "raw_scores", "scores", "pattern", "heads", "attended", "output")
PASS_POINTS = ("tokens", "position")  # the stack's token vectors (B, n, d); an additive encoding's offsets (n, d)
UNBATCHED_POINTS = ("position",)  # the same for every sequence of a batch
# A transformers model's are its family's (orderlab/families/family.py: HF_HOOK_POINTS).


def hook_name(layer: int, point: str) -> str:
    """'2.pattern': layer 2's attention probabilities (layers from 1)."""
    return f"{layer}.{point}"


# The points only explicit attention forms (the fused kernel and prefix sharing never do): asking for one of them,
# and only then, takes a pass off the fast path.
ATTENTION_POINTS = ("q", "k", "v", "raw_scores", "scores", "pattern", "heads")


def point_of(name: str) -> str:
    """'2.pattern' -> 'pattern'; a whole pass's point ('tokens') is its own."""
    return name.partition(".")[2] or name


def pattern_points(n_layers: int) -> list[str]:
    """Every layer's attention probabilities: how a caller asks a pass for its attention maps (one channel)."""
    return [hook_name(layer, "pattern") for layer in range(1, n_layers + 1)]
