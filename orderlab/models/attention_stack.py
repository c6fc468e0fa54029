"""The attention stack: plain torch, readable, batched. Knows nothing of specs, files or terminals.

Row-vector convention throughout (q = x @ W_Q), as in textbooks, so explicit matrices typed into a
spec mean what they mean on paper. Returns the hidden states after every layer and every
attention map, for the metrics to read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from orderlab.core.hook_points import hook_name
from orderlab.encodings.encoding import PositionalEncoding
from orderlab.errors import failure_line
from orderlab.models.user_hooks import UserHook, applied

Matrix = Sequence[Sequence[float]]  # rows of numbers, as a spec types them in

# Named intermediates of one pass (core/hook_points.py), filled only when a caller passes a dict.
Hooks = dict[str, torch.Tensor]


class Requested(dict[str, torch.Tensor]):
    """Hooks that keep only the points a caller asked for: a pass then holds no intermediate nobody reads (every
    layer's q, k, scores... would otherwise live until the pass returns); and the user's functions that replace
    points (`writes`: run(spec, hooks=...)), the one channel a pass reads and writes its points through."""

    def __init__(self, wanted: Collection[str], writes: Mapping[str, UserHook] | None = None):
        super().__init__()
        self.wanted, self.writes = frozenset(wanted), dict(writes or {})

    def __setitem__(self, name: str, tensor: torch.Tensor) -> None:
        if name in self.wanted:
            super().__setitem__(name, tensor)


def record(hooks: Hooks | None, name: str, tensor: torch.Tensor) -> torch.Tensor:
    """The point as the pass goes on with it (a user's function's output where one writes it), kept if asked for."""
    if hooks is None:
        return tensor
    if isinstance(hooks, Requested) and name in hooks.writes:
        tensor = applied(name, hooks.writes[name], tensor)
    hooks[name] = tensor
    return tensor


@dataclass(frozen=True)
class StackConfig:
    """The stack's shape in plain values. No defaults: the spec's ModelSpec holds them and its fields of these names
    are copied here in one place (models/stack_builder.stack_config), so the two cannot drift apart."""

    d_model: int
    n_heads: int
    n_layers: int
    residual: bool  # add each sub-layer's input to its output
    norm: str  # "pre" | "post" | "none" (LayerNorm without learned affine)
    ffn: bool  # position-wise feed-forward after attention
    ffn_mult: int  # FFN hidden width = ffn_mult * d_model
    causal: bool  # token i attends to slots <= i only
    scale: str  # "sqrt": scores / sqrt(d_head); "none": raw scores
    dtype: str

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class LayerWeights:
    w_q: torch.Tensor  # (d, d)
    w_k: torch.Tensor  # (d, d)
    w_v: torch.Tensor  # (d, d)
    w_o: torch.Tensor  # (d, d)
    w_in: torch.Tensor  # (d, ffn_mult * d)
    w_out: torch.Tensor  # (ffn_mult * d, d)


@dataclass(frozen=True)
class RunLayer:
    """One layer's weights as the stack runs them: on its device and dtype, q, k and v projections side by side."""

    w_qkv: torch.Tensor  # (d, 3d) = [W_Q | W_K | W_V]: one matmul (one pass over x) projects all three
    w_o: torch.Tensor  # (d, d)
    w_in: torch.Tensor  # (d, ffn_mult * d)
    w_out: torch.Tensor  # (ffn_mult * d, d)

    @classmethod
    def of(cls, w: LayerWeights, device: torch.device | str, dtype: torch.dtype) -> RunLayer:
        def put(t: torch.Tensor) -> torch.Tensor:
            return t.to(device=device, dtype=dtype)

        return cls(put(torch.cat([w.w_q, w.w_k, w.w_v], dim=1)), put(w.w_o), put(w.w_in), put(w.w_out))


@dataclass(frozen=True)
class StackOutput:
    hidden: list[torch.Tensor]  # n_layers + 1 tensors (B, n, d); hidden[0] is the input, encoding added
    attention: list[torch.Tensor]  # n_layers tensors (B, h, n, n); row i: how slot i spreads its attention
    # attention is empty when the call asked for no maps (the fused kernel never forms them)


# One kind of attention, given a layer's normed input: its output and its weights (None from the fused kernel).
# The dense pass's (AttentionStack.attend, attend_fused) and prefix sharing's walk of the trie
# (prefix_trie.trie_attention) run inside the same block (AttentionStack.block).
Attention = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]]


def seeded_weights(config: StackConfig, seed: int) -> list[LayerWeights]:
    """Gaussian weights with variance 1/fan_in, drawn in float64 on the CPU (same on every machine)."""
    generator = torch.Generator().manual_seed(seed)
    d, f = config.d_model, config.ffn_mult * config.d_model

    def draw(rows: int, cols: int) -> torch.Tensor:
        return torch.randn(rows, cols, generator=generator, dtype=torch.float64) / math.sqrt(rows)

    return [
        LayerWeights(draw(d, d), draw(d, d), draw(d, d), draw(d, d), draw(d, f), draw(f, d))
        for _ in range(config.n_layers)
    ]


def explicit_weights(
    config: StackConfig, seed: int, w_q: Matrix, w_k: Matrix, w_v: Matrix, w_o: Matrix | None = None
) -> list[LayerWeights]:
    """The given projections in every layer (W_O = identity if None); FFN weights stay seeded."""

    def as_tensor(m: Matrix) -> torch.Tensor:
        return torch.tensor(m, dtype=torch.float64)

    output = as_tensor(w_o) if w_o is not None else torch.eye(config.d_model, dtype=torch.float64)
    return [
        LayerWeights(as_tensor(w_q), as_tensor(w_k), as_tensor(w_v), output, seeded.w_in, seeded.w_out)
        for seeded in seeded_weights(config, seed)
    ]


class AttentionStack:
    """n_layers blocks of multi-head self-attention (+ FFN), with one positional encoding."""

    def __init__(
        self,
        config: StackConfig,
        encoding: PositionalEncoding,
        weights: list[LayerWeights],
        device: torch.device | str = "cpu",
    ):
        self.config, self.encoding = config, encoding
        dtype = getattr(torch, config.dtype)
        self.layers = [RunLayer.of(w, device, dtype) for w in weights]
        self.device, self.dtype = torch.device(device), dtype
        self.compiled: Callable[[torch.Tensor], list[torch.Tensor]] | None = None
        self.compile_seconds: float | None = None  # the first compiled call's wall time, compilation included
        self.compile_failure = ""  # why the compiled pass fell back to eager, if it did

    def compile(self, backend: str = "inductor") -> None:
        """Run passes without maps or hooks through torch.compile (inductor) from the next call on.

        Inductor fuses the elementwise work around the matmuls (LayerNorm, GELU, adds, the head reshapes);
        one compilation with dynamic batch sizes serves every chunk. Where no compiler works, the first call
        falls back to eager (compile_failure says why) and the run goes on.
        """
        self.compiled = torch.compile(self.fused_hidden, dynamic=True, backend=backend)

    def fused_hidden(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The hidden states of a pass without maps or hooks: the function torch.compile compiles."""
        hidden = [x]
        for layer in self.layers:
            x, _ = self.block(x, layer, self.dense_attention(layer, attention_maps=False))
            hidden.append(x)
        return hidden

    def run_compiled(self, x: torch.Tensor, compiled: Callable[[torch.Tensor], list[torch.Tensor]]) -> StackOutput:
        if self.compile_seconds is not None:
            return StackOutput(compiled(x), [])
        started = time.perf_counter()
        try:
            hidden = compiled(x)
        except Exception as error:  # any compiler failure (no C compiler, no headers, an unsupported op): run eager
            self.compiled, self.compile_failure = None, failure_line(error)
            return StackOutput(self.fused_hidden(x), [])
        self.compile_seconds = time.perf_counter() - started
        return StackOutput(hidden, [])

    def __call__(self, x: torch.Tensor, attention_maps: bool = True, hooks: Hooks | None = None) -> StackOutput:
        """x: (B, n, d) token vectors of B sentences of equal length n.

        attention_maps=False lets attention run as torch's fused scaled_dot_product_attention,
        which never forms the (B, h, n, n) weights; the hidden states then agree with the explicit
        path to round-off (tests/unit/models/test_stack_fused.py), not bit for bit. `hooks`, a dict, receives every
        intermediate of this pass under the names of `hook_name` (explicit attention only), so that tools
        such as `trace` and `properties` read them instead of recomputing attention.
        """
        x = x.to(device=self.device, dtype=self.dtype)
        record(hooks, "tokens", x)  # (B, n, d)
        offsets = self.encoding.input_offsets(x.shape[1])
        if offsets is not None:
            x = x + offsets.to(x)  # (B, n, d)
            record(hooks, "position", offsets.to(x))  # (n, d)
        if self.compiled is not None and not attention_maps and hooks is None:
            return self.run_compiled(x, self.compiled)
        hidden, attention = [x], []
        for index, layer in enumerate(self.layers, start=1):
            x, weights = self.block(x, layer, self.dense_attention(layer, attention_maps, hooks, index), hooks, index)
            hidden.append(x)
            if weights is not None:
                attention.append(weights)
        return StackOutput(hidden, attention)

    def block(
        self, x: torch.Tensor, layer: RunLayer, attention: Attention, hooks: Hooks | None = None, index: int = 1
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One layer around any kind of attention: pre-norm, attention, residual and post-norm, then the FFN likewise.

        x is (..., d): (B, n, d) sentences in the dense pass, (U, d) every depth's prefixes in prefix sharing's, which
        therefore share every number outside attention.
        """
        c = self.config
        x = record(hooks, hook_name(index, "input"), x)
        normed = self.pre_norm(x)
        if c.norm == "pre":
            normed = record(hooks, hook_name(index, "normed"), normed)
        attended, weights = attention(normed)
        attended = record(hooks, hook_name(index, "attn_out"), attended)
        x = self.post_norm(x + attended if c.residual else attended)
        if c.ffn:
            x = record(hooks, hook_name(index, "mid"), x)  # between attention and the feed-forward
            transformed = record(hooks, hook_name(index, "mlp_out"), self.feed_forward(x, layer))
            x = self.post_norm(x + transformed if c.residual else transformed)
        x = record(hooks, hook_name(index, "output"), x)
        return x, weights

    def dense_attention(
        self, layer: RunLayer, attention_maps: bool, hooks: Hooks | None = None, index: int = 1
    ) -> Attention:
        """Every slot attending over the sentence: explicit (weights formed, hooks filled), or through torch's fused
        kernel when no maps are asked for (no weights)."""
        if attention_maps:
            return lambda normed: self.attend(normed, layer, hooks, index)
        return lambda normed: self.attend_fused(normed, layer)

    def feed_forward(self, x: torch.Tensor, layer: RunLayer) -> torch.Tensor:
        """The position-wise FFN: GELU(norm(x) W_in) W_out, its GELU in place where no gradient is taken: writing the
        widest activation anew costs memory traffic the in-place form saves."""
        widened = self.pre_norm(x) @ layer.w_in
        activated = F.gelu(widened) if torch.is_grad_enabled() else torch.ops.aten.gelu_(widened)
        return activated @ layer.w_out

    def attend(
        self, x: torch.Tensor, layer: RunLayer, hooks: Hooks | None = None, index: int = 1
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Multi-head attention; returns the output (B, n, d) and the weights (B, h, n, n)."""
        B, n, d = x.shape
        q, k, v = (
            record(hooks, hook_name(index, name), tensor)
            for name, tensor in zip("qkv", self.project(x, layer), strict=True)
        )  # each (B, h, n, dh)
        scores = q @ k.transpose(-2, -1)  # (B, h, n, n)
        scores = record(hooks, hook_name(index, "raw_scores"), scores)
        scores = self.scaled(scores)
        bias = self.encoding_bias(q, k)
        if bias is not None:
            scores = scores + bias
        if self.config.causal:
            scores = scores.masked_fill(future_slots(n, x.device), float("-inf"))
        scores = record(hooks, hook_name(index, "scores"), scores)
        weights = record(hooks, hook_name(index, "pattern"), scores.softmax(dim=-1))  # (B, h, n, n)
        heads = record(hooks, hook_name(index, "heads"), weights @ v)  # (B, h, n, dh)
        return heads.transpose(1, 2).reshape(B, n, d) @ layer.w_o, weights

    def project(self, x: torch.Tensor, layer: RunLayer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys (rotated by the encoding) and values, split into heads: each (B, h, n, dh).

        One matmul for all three; q, k and v are strided views of its output (no copies).
        """
        B, n, _ = x.shape
        h, dh = self.config.n_heads, self.config.d_head
        q, k, v = (x @ layer.w_qkv).view(B, n, 3, h, dh).permute(2, 0, 3, 1, 4)  # each (B, h, n, dh)
        q, k = self.encoding.rotate(q, k)
        return q.to(v), k.to(v), v  # in the stack's dtype, whatever the encoding computed in

    def attend_fused(self, x: torch.Tensor, layer: RunLayer) -> tuple[torch.Tensor, None]:
        """The same attention through torch's fused kernel: output (B, n, d), no weights."""
        B, n, d = x.shape
        q, k, v = self.project(x, layer)  # each (B, h, n, dh)
        bias = self.encoding_bias(q, k)  # the fused kernel wants the mask in the query's dtype
        if bias is not None and self.config.causal:
            bias = bias.masked_fill(future_slots(n, x.device), float("-inf"))
        scale = 1 / math.sqrt(self.config.d_head) if self.config.scale == "sqrt" else 1.0
        causal = self.config.causal and bias is None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal, scale=scale)  # (B, h, n, dh)
        return out.transpose(1, 2).reshape(B, n, d) @ layer.w_o, None

    def scaled(self, scores: torch.Tensor) -> torch.Tensor:
        """Raw scores q . k divided by sqrt(d_head), or left raw (scale: none)."""
        return scores / math.sqrt(self.config.d_head) if self.config.scale == "sqrt" else scores

    def encoding_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor | None:
        """The encoding's additive score bias for these queries and keys, in the stack's dtype (whatever the encoding
        computed in), or None."""
        bias = self.encoding.attention_bias(q, k)
        return None if bias is None else bias.to(q)

    def pre_norm(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:]) if self.config.norm == "pre" else x

    def post_norm(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:]) if self.config.norm == "post" else x


def future_slots(n: int, device: torch.device) -> torch.Tensor:
    """(n, n) bool, True above the diagonal: the keys a causal stack's query may not see."""
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(1)
