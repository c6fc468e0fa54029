"""One attention layer step by step, for checking a worked example number for number.

`trace_pass` asks the model's adapter for every hook point of one layer on one sentence (one forward pass:
the measured model, the same code path as every run) and keeps what the model exposes: for the attention
stack every intermediate (token vectors, positions, input, LayerNorm(x), Q, K, V, raw and scaled scores,
weights, heads, attention output, layer output); for a model of the zoo the points its family declares (layer
input, Q, K, V before any rotation, attention probabilities, attention output, layer output), on its own token
slots. Nothing here recomputes attention. Compute only:
commands/trace.py writes the CSV, report/terminal.py draws the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from orderlab.core.hook_points import HOOK_POINTS, hook_name
from orderlab.core.text import tokenize
from orderlab.measure.adapters import build_adapters
from orderlab.models.adapter_protocol import Adapter
from orderlab.models.devices import CPU
from orderlab.models.hf.given import UserModel
from orderlab.spec.model_specs import HFModelSpec, PretrainedModelSpec
from orderlab.spec.schema import Spec


@dataclass(frozen=True)
class LayerTrace:
    """One layer's hook points on one sentence; None where the model does not expose the point."""

    words: list[str]  # the model's slots: the stack's words, a tokenizer's tokens (specials included)
    layer: int  # 1-based: the layer whose attention is traced
    encoding: str  # the condition traced: an encoding's label, or a zoo model's ablation label
    tokens: torch.Tensor | None  # (n, d) token vectors (the stack's)
    position: torch.Tensor | None  # (n, d) what an additive encoding adds (layer 1 only), else None
    x: torch.Tensor  # (n, d) the layer's input (tokens + position at layer 1)
    normed: torch.Tensor | None  # (n, d) LayerNorm(x) fed to attention when norm = pre, else None
    q: torch.Tensor | None  # (h, n, dh) queries (rotated by slot for rotary encodings)
    k: torch.Tensor | None  # (h, n, dh) keys (rotated likewise)
    v: torch.Tensor | None  # (h, n, dh) values
    raw: torch.Tensor | None  # (h, n, n) q . k
    scaled: torch.Tensor | None  # (h, n, n) raw / sqrt(dh), plus any encoding bias; -inf where masked
    weights: torch.Tensor  # (h, n, n) softmax over keys
    heads: torch.Tensor | None  # (h, n, dh) weights @ v
    attended: torch.Tensor | None  # (n, d) heads concatenated @ W_O
    output: torch.Tensor  # (n, d) the layer's output (after residual, norm, FFN as configured)


def conditions(spec: Spec) -> list[tuple[str, str]]:
    """(label, name) of each condition in the spec's order: its encodings, or a zoo model's position ablations."""
    model = spec.model
    if isinstance(model, PretrainedModelSpec | HFModelSpec):
        return [(model.label(ablation), ablation) for ablation in model.position_embeddings]
    return [(choice.label, choice.name) for choice in spec.encodings]


def traced_adapter(spec: Spec, label: str, spec_file: Path, given: UserModel | None = None) -> Adapter:
    """The adapter of condition `label` on the CPU, as a run builds it (a zoo model with eager attention, whose
    pass returns its attention probabilities); spec is concrete. given: the model object the spec describes
    (orderlab.api.trace(spec, model=...)), traced in place of any model the spec would build."""
    adapters = build_adapters(spec, CPU, spec_file, attention_maps=True, given=given)
    return next(adapter for adapter in adapters if adapter.label == label)


def trace_pass(adapter: Adapter, words: list[str], layer: int) -> LayerTrace:
    """Every hook point of layer `layer` (1-based) that the adapter exposes, from one pass over `words`."""
    request = ["tokens", "position", *(hook_name(layer, point) for point in HOOK_POINTS)]
    bound = adapter.sentence(words)
    with torch.inference_mode():
        hooks = bound.forward(torch.arange(len(words), device=adapter.device)[None], request).hooks
    point = {name: hooks[hook_name(layer, name)][0] for name in HOOK_POINTS if hook_name(layer, name) in hooks}
    tokens = hooks["tokens"][0] if "tokens" in hooks else None
    position = hooks.get("position") if layer == 1 else None
    return LayerTrace(
        words=bound.slot_names(), layer=layer, encoding=adapter.label, tokens=tokens, position=position,
        x=point["input"], normed=point.get("normed"), q=point.get("q"), k=point.get("k"), v=point.get("v"),
        raw=point.get("raw_scores"), scaled=point.get("scores"), weights=point["pattern"], heads=point.get("heads"),
        attended=point.get("attn_out"), output=point["output"],
    )  # fmt: skip


def trace_layer(
    spec: Spec, sentence: str, layer: int, encoding_index: int = 0, spec_file: Path = Path("spec.yaml")
) -> LayerTrace:
    """Layer `layer` (1-based) of the spec's condition `encoding_index` (in the spec's order) on one sentence;
    spec is concrete, spec_file says where a zoo model's path and corpus are read from."""
    adapter = traced_adapter(spec, conditions(spec)[encoding_index][0], spec_file)
    return trace_pass(adapter, tokenize(sentence, spec.embeddings.lowercase), layer)


def trace_frame(trace: LayerTrace) -> pd.DataFrame:
    """Tidy rows: quantity, head (empty for whole-vector quantities), slot, word, index, value."""
    rows = []

    def add(quantity: str, matrix: torch.Tensor | None, head: int | None = None) -> None:
        if matrix is None:
            return
        for slot, vector in enumerate(matrix.double().tolist()):
            for index, value in enumerate(vector):
                rows.append((trace.encoding, trace.layer, quantity, head, slot, trace.words[slot], index, value))

    add("token", trace.tokens)
    add("position", trace.position)
    add("input", trace.x)
    add("normed_input", trace.normed)
    for head in range(trace.weights.shape[0]):
        for quantity in ("q", "k", "v", "raw", "scaled", "weights", "heads"):
            name = {"raw": "raw_score", "scaled": "scaled_score", "heads": "head_output"}.get(quantity, quantity)
            matrix = getattr(trace, quantity)
            add(name, None if matrix is None else matrix[head], head)
    add("attention_output", trace.attended)
    add("layer_output", trace.output)
    columns = ["encoding", "layer", "quantity", "head", "slot", "word", "index", "value"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["head"] = frame["head"].astype("Int64")
    return frame
