"""One attention layer step by step, for checking a worked example number for number.

`trace_layer` runs the stack, takes the input of layer L and redoes that layer's attention one
step at a time (Q, K, V, raw scores, scaled scores, weights, output), keeping every
intermediate. The stack stays the one source of truth: the final step of the trace is the stack's
own output, and tests check that the recomputed steps agree with it. Never prints.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from orderlab.errors import OrderlabError
from orderlab.models.attention_stack import HOOK_POINTS, Hooks, hook_name
from orderlab.models.devices import CPU
from orderlab.models.stack import StackAdapter
from orderlab.models.stack_from_spec import layer_weights, word_vectors
from orderlab.results.folder import staged_folder, write_csv
from orderlab.results.ownership import Claim, Writer, claim
from orderlab.spec.load import load_spec
from orderlab.spec.schema import Spec, uses_backend
from orderlab.spec.sweep import plan
from orderlab.spec.text import tokenize


@dataclass(frozen=True)
class LayerTrace:
    words: list[str]
    layer: int  # 1-based: the layer whose attention is traced
    encoding: str
    tokens: torch.Tensor  # (n, d) word vectors
    position: torch.Tensor | None  # (n, d) what an additive encoding adds (layer 1 only), else None
    x: torch.Tensor  # (n, d) the layer's input (tokens + position at layer 1)
    normed: torch.Tensor | None  # (n, d) LayerNorm(x) fed to attention when norm = pre, else None
    q: torch.Tensor  # (h, n, dh) queries (rotated by slot for rotary encodings)
    k: torch.Tensor  # (h, n, dh) keys (rotated likewise)
    v: torch.Tensor  # (h, n, dh) values
    raw: torch.Tensor  # (h, n, n) q . k
    scaled: torch.Tensor  # (h, n, n) raw / sqrt(dh), plus any encoding bias; -inf where masked
    weights: torch.Tensor  # (h, n, n) softmax over keys
    heads: torch.Tensor  # (h, n, dh) weights @ v
    attended: torch.Tensor  # (n, d) heads concatenated @ W_O
    output: torch.Tensor  # (n, d) the layer's output (after residual, norm, FFN as configured)


def trace_layer(spec: Spec, sentence: str, layer: int, encoding_index: int = 0) -> LayerTrace:
    """Every intermediate of layer `layer` (1-based) of the spec's stack on one sentence; spec is concrete.

    Read from the stack's own hooks in one pass: nothing here recomputes attention.
    """
    choice = spec.encodings[encoding_index]
    stack = StackAdapter(spec, choice, layer_weights(spec), CPU).stack  # the measured model
    words = tokenize(sentence, spec.embeddings.lowercase)
    tokens = word_vectors(spec, words).to(stack.dtype)  # (n, d)
    hooks: Hooks = {}
    with torch.inference_mode():
        stack(tokens[None], hooks=hooks)
    point = {name: hooks[hook_name(layer, name)][0] for name in HOOK_POINTS}  # batch of one
    position = hooks.get("position") if layer == 1 else None
    return LayerTrace(
        words=words, layer=layer, encoding=choice.label, tokens=tokens, position=position, x=point["input"],
        normed=point["normed"] if stack.config.norm == "pre" else None, q=point["q"], k=point["k"], v=point["v"],
        raw=point["raw_scores"], scaled=point["scores"], weights=point["pattern"], heads=point["heads"],
        attended=point["attended"], output=point["output"],
    )  # fmt: skip


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
    for head in range(trace.q.shape[0]):
        for quantity in ("q", "k", "v", "raw", "scaled", "weights", "heads"):
            name = {"raw": "raw_score", "scaled": "scaled_score", "heads": "head_output"}.get(quantity, quantity)
            add(name, getattr(trace, quantity)[head], head)
    add("attention_output", trace.attended)
    add("layer_output", trace.output)
    columns = ["encoding", "layer", "quantity", "head", "slot", "word", "index", "value"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["head"] = frame["head"].astype("Int64")
    return frame


@dataclass(frozen=True)
class TraceOutcome:
    trace: LayerTrace
    path: Path  # the CSV written
    note: str  # e.g. which sweep combination was traced; empty if nothing to say


def trace_and_write(
    spec_path: Path, input_index: int, layer: int, encoding: str, out_root: Path, force: bool = False
) -> TraceOutcome:
    """`orderlab trace`: check the choices, trace the layer, write the tidy CSV (atomically)."""
    spec = load_spec(spec_path).spec
    if uses_backend(spec):
        raise OrderlabError(
            f"{spec_path}: trace follows the synthetic attention stack step by step; a pretrained model is not "
            "traced; expected a spec without model.kind"
        )
    configurations = plan(spec)
    concrete, note = configurations[0].spec, ""
    if configurations[0].columns:
        note = f"the spec sweeps {', '.join(configurations[0].columns)}; tracing {configurations[0].label}"
    if not 0 <= input_index < len(spec.sentences):
        raise OrderlabError(
            f"--input {input_index}: the spec has {len(spec.sentences)} input(s); expected 0..{len(spec.sentences) - 1}"
        )
    n_layers = concrete.stack.n_layers
    if not 1 <= layer <= n_layers:
        raise OrderlabError(f"--layer {layer}: the stack has {n_layers} layer(s); expected 1..{n_layers}")
    labels = [choice.label for choice in spec.encodings]
    names = [choice.name for choice in spec.encodings]
    if encoding and encoding not in labels + names:
        raise OrderlabError(f"--encoding {encoding!r} is not in the spec; expected one of {', '.join(labels)}")
    index = labels.index(encoding) if encoding in labels else names.index(encoding) if encoding else 0
    file_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"input{input_index}-layer{layer}-{labels[index]}") + ".csv"
    with claim(out_root / f"{spec.name}_trace", Writer("trace", spec.name), force) as held:
        traced = trace_layer(concrete, spec.sentences[input_index].sentence, layer, index)
        write_trace(held, file_name, trace_frame(traced))
    return TraceOutcome(traced, held.folder / file_name, note)


def write_trace(held: Claim, file_name: str, frame: pd.DataFrame) -> None:
    """Rewrite the trace folder whole: the earlier traces of this spec kept, `file_name` written anew."""
    earlier = [path for path in held.own_files() if path.name != file_name]

    with staged_folder(held.folder) as staging:
        for path in earlier:
            shutil.copy2(path, staging / path.name)
        write_csv(frame, staging / file_name)
