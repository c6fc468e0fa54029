"""The names of the hook points a forward pass can hand back (TransformerLens's habit): one vocabulary for the
attention stack and every model family. Torch-free, so that `orderlab models` and `orderlab hooks` list them and a
spec's hooks are validated without loading a model.

A layer's point is named `hook_name(layer, point)` ('2.pattern': layer 2's attention probabilities); a whole pass's
point by its name alone. Each adapter says which points its model exposes (adapter_protocol.Adapter.hook_points); a
family declares where its modules form each point (families/family.py: HookSite).
"""

from __future__ import annotations

# Every model's, per layer, in the order a pass forms them: the layer's input; queries, keys and values (B, heads,
# slots, d_head); the attention probabilities (B, heads, slots, slots); attention's output before the residual
# (B, slots, d); `mid`, the residual stream between attention and the feed-forward (where the block has one: not in
# a parallel-residual block); the feed-forward's output before the residual; the layer's output.
LAYER_POINTS = ("input", "q", "k", "v", "pattern", "attn_out", "mid", "mlp_out", "output")
LOGITS = "logits"  # a causal LM's whole pass: next-token logits (B, slots, vocabulary)

# The attention stack's, per layer: LAYER_POINTS and the steps between them that only its explicit attention forms
# (normed only with norm: pre; q and k after the encoding's rotation; scores scaled, biased and masked).
HOOK_POINTS = ("input", "normed", "q", "k", "v", "raw_scores", "scores", "pattern", "heads", "attn_out", "mid",
               "mlp_out", "output")  # fmt: skip
PASS_POINTS = ("tokens", "position")  # the stack's token vectors (B, n, d); an additive encoding's offsets (n, d)
WHOLE_PASS_POINTS = (*PASS_POINTS, LOGITS)  # any model's points named without a layer
UNBATCHED_POINTS = ("position",)  # the same for every sequence of a batch
# A transformers model's are its family's (families/family.py: Family.hook_points).


def hook_name(layer: int, point: str) -> str:
    """'2.pattern': layer 2's attention probabilities (layers from 1)."""
    return f"{layer}.{point}"


# The points only explicit attention forms (the fused kernel and prefix sharing never do): asking for one of them,
# and only then, takes a pass off the fast path.
ATTENTION_POINTS = ("q", "k", "v", "raw_scores", "scores", "pattern", "heads")


# The axes of a point's batched tensor that run over the tokens, the first the one a slot selects: the slots' own
# (B, slots, ...) for the residual stream's points; (B, heads, slots, d_head) for q, k, v and heads; the queries' and
# then the keys' for attention's (B, heads, slots, slots) scores and probabilities. A write of one slot group
# (measure/patching.py) marks the first axis and reorders every one of them.
TOKEN_AXES = {"q": (2,), "k": (2,), "v": (2,), "heads": (2,), "raw_scores": (2, 3), "scores": (2, 3),
              "pattern": (2, 3)}  # fmt: skip


def token_axes(point: str) -> tuple[int, ...]:
    """The axes of `point`'s batched tensor that run over the tokens, the slot's first (TOKEN_AXES; else (1,))."""
    return TOKEN_AXES.get(point, (1,))


def point_of(name: str) -> str:
    """'2.pattern' -> 'pattern'; a whole pass's point ('tokens') is its own."""
    return name.partition(".")[2] or name


def layer_of(name: str) -> int | None:
    """'2.pattern' -> 2; None for a whole pass's point or a name whose layer is not a number."""
    layer, dot, _ = name.partition(".")
    return int(layer) if dot and layer.isdigit() else None


def pattern_points(n_layers: int) -> list[str]:
    """Every layer's attention probabilities: how a caller asks a pass for its attention maps (one channel)."""
    return [hook_name(layer, "pattern") for layer in range(1, n_layers + 1)]


def unknown_point(
    name: str, n_layers: int | None, layer_points: tuple[str, ...], pass_points: tuple[str, ...] = ()
) -> str | None:
    """Why `name` is no hook point of a model of `n_layers` layers (None: not known yet, any from 1) exposing these
    points, in one line naming the valid ones; None for a hook point."""
    layer = layer_of(name)
    in_range = layer is not None and layer >= 1 and (n_layers is None or layer <= n_layers)
    if name in pass_points or (in_range and point_of(name) in layer_points):
        return None
    layers = "L from 1" if n_layers is None else f"L in 1..{n_layers}"
    whole = f"{', '.join(pass_points)}, or " if pass_points else ""
    points = ", ".join(layer_points)
    return f"{name!r} is no hook point; expected {whole}L.POINT with {layers} and POINT one of {points}"


# TransformerLens's name of each point (HookedTransformer.run_with_cache's keys), its layers counted from 0: '2.q' is
# blocks.1.attn.hook_q. Its q, k, v and heads are (B, T, heads, d_head) where orderlab's are (B, heads, T, d_head);
# its attention scores are scaled and masked, as orderlab's `scores` (raw_scores, before, has no hook there).
TRANSFORMER_LENS = {
    "input": "blocks.{l}.hook_resid_pre",
    "normed": "blocks.{l}.ln1.hook_normalized",
    "q": "blocks.{l}.attn.hook_q",
    "k": "blocks.{l}.attn.hook_k",
    "v": "blocks.{l}.attn.hook_v",
    "raw_scores": "",
    "scores": "blocks.{l}.attn.hook_attn_scores",
    "pattern": "blocks.{l}.attn.hook_pattern",
    "heads": "blocks.{l}.attn.hook_z",
    "attn_out": "blocks.{l}.hook_attn_out",
    "mid": "blocks.{l}.hook_resid_mid",
    "mlp_out": "blocks.{l}.hook_mlp_out",
    "output": "blocks.{l}.hook_resid_post",
    "tokens": "hook_embed",
    "position": "hook_pos_embed",
    LOGITS: "unembed.hook_out",
}


def transformer_lens_name(name: str) -> str:
    """'2.q' -> 'blocks.1.attn.hook_q' (TransformerLens counts layers from 0); '' where it has no such hook."""
    layer = layer_of(name)
    return TRANSFORMER_LENS[point_of(name)].format(l=(layer or 1) - 1)
