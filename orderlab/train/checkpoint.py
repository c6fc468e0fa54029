"""Trained stacks to and from safetensors files: results/<name>/checkpoints/<encoding>.safetensors.

The tensors are the layers' weights, the encoding's trained tables and the read-out; the metadata
(orderlab/spec/checkpoint_meta.py reads it without torch) holds what rebuilds the stack around them: its model fields,
the encoding, the seed its word vectors come from and the `train:` block.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load, save_file

from orderlab.core.userfiles import FileProblem, read_file
from orderlab.encodings import EncodingContext, build_encoding
from orderlab.models.attention_stack import LayerWeights
from orderlab.spec.checkpoint_meta import (
    EXPECTED,
    LAYER_TENSORS,
    METADATA,
    METADATA_KEY,
    Checkpoint,
    CheckpointMeta,
    read_checkpoint,
    some,
)
from orderlab.spec.load import trained_encoding
from orderlab.spec.schema import EncodingChoice, Spec
from orderlab.spec.sweep import Configuration
from orderlab.train.train import TRAIN_DTYPE, TrainedStack, draw_tables

CHECKPOINTS = "checkpoints"  # the folder inside results/<name>/
STACK_FIELDS = ("d_model", "n_heads", "n_layers", "residual", "norm", "ffn", "ffn_mult", "causal", "scale", "dtype")


def checkpoint_name(label: str, combination: str) -> str:
    """`rope.safetensors`, or `n_layers=2_rope.safetensors` in a sweep."""
    return f"{combination.replace(' ', '_')}_{label}.safetensors" if combination else f"{label}.safetensors"


def write_checkpoints(folder: Path, trained: list[tuple[Configuration, TrainedStack]]) -> list[str]:
    """Every trained stack of a run into folder (created); returns the files' names."""
    folder.mkdir()
    names = []
    for configuration, stack in trained:
        names.append(checkpoint_name(stack.choice.label, configuration.label))
        save_checkpoint(folder / names[-1], configuration.spec, stack)
    return names


def save_checkpoint(path: Path, spec: Spec, stack: TrainedStack) -> None:
    tensors = {f"layers.{i}.{f.name}": getattr(layer, f.name) for i, layer in enumerate(stack.weights)
               for f in fields(layer)}  # fmt: skip
    tensors |= {f"tables.{i}": table for i, table in enumerate(stack.tables.values())}
    tensors |= {"head": stack.head, "head_bias": stack.head_bias}
    metadata = {
        "model": {name: getattr(spec.stack, name) for name in STACK_FIELDS},
        "encoding": {"name": stack.choice.name, "params": stack.choice.params},
        "seed": spec.seed,
        "train": spec.train.model_dump(mode="json") if spec.train else None,
        "tables": [[list(shape), sigma] for shape, sigma in stack.tables],
    }
    contiguous = {name: tensor.contiguous() for name, tensor in tensors.items()}
    save_file(contiguous, str(path), metadata={METADATA_KEY: json.dumps(metadata, sort_keys=True)})


def load_checkpoint(path: Path, spec: Spec) -> TrainedStack:
    """The trained stack a checkpoint holds (float64 tensors, as training left them), for `spec` to measure.

    load.from_checkpoint filled `spec` from this file's metadata; what is checked again here is what may have changed
    since (the file, or a command that swapped the spec's encodings): the metadata matches the spec, the encoding
    draws exactly the tables the file holds, and every tensor is whole, of its shape and finite. Any fault is one
    FileProblem line. Tensors are read by safetensors alone: never pickle.
    """
    checkpoint = read_checkpoint(path)
    meta = checkpoint.meta
    choice = trained_encoding(path, meta, spec)  # as validate checked it: the file may have changed since
    _check_matches_spec(path, meta, choice, spec)
    _check_tables(path, meta, choice)
    tensors = _read_tensors(checkpoint)
    layers = [LayerWeights(**{name: tensors[f"layers.{i}.{name}"] for name in LAYER_TENSORS})
              for i in range(meta.model.n_layers)]  # fmt: skip
    tables = {(tuple(shape), sigma): tensors[f"tables.{i}"] for i, (shape, sigma) in enumerate(meta.tables)}
    return TrainedStack(choice, layers, tables, tensors["head"], tensors["head_bias"], [])


def _check_matches_spec(path: Path, meta: CheckpointMeta, choice: EncodingChoice, spec: Spec) -> None:
    """The spec measures the stack as it was trained: its encoding, seed and shape are the checkpoint's."""
    if spec.encodings != [choice]:
        named = ", ".join(encoding.label for encoding in spec.encodings)
        raise FileProblem(path, f"trained with encoding {choice.label}, measured under [{named}]; expected the "
                          "encoding it was trained with", f"{METADATA}: encoding")  # fmt: skip
    if spec.seed != meta.seed:
        raise FileProblem(path, f"{meta.seed}, where the spec's seed is {spec.seed}; expected the seed its word "
                          "vectors were drawn with", f"{METADATA}: seed")  # fmt: skip
    shape = {name: getattr(spec.stack, name) for name in STACK_FIELDS}
    if meta.model.model_dump() != shape:
        raise FileProblem(path, f"{meta.model.model_dump()}, where the spec's stack is {shape} (the file changed "
                          "since the spec was read?); expected the stack the spec was filled from",
                          f"{METADATA}: model")  # fmt: skip


def _check_tables(path: Path, meta: CheckpointMeta, choice: EncodingChoice) -> None:
    """The file holds a trained table for each table the encoding draws when trained, and no other."""
    m = meta.model
    context = EncodingContext(d_model=m.d_model, n_heads=m.n_heads, causal=m.causal, seed=meta.seed,
                              dtype=TRAIN_DTYPE, max_len=meta.train.longest)  # fmt: skip
    encoding = build_encoding(choice.name, context, choice.params)
    draw_tables(encoding, meta.train)
    drawn = {(tuple(shape), float(sigma)) for shape, sigma in encoding.tables()}
    held = {(tuple(shape), sigma) for shape, sigma in meta.tables}
    if drawn != held:
        extra = some(len(held - drawn), f"that {choice.label} does not draw", [str(t) for t in sorted(held - drawn)])
        lacking = some(len(drawn - held), f"of {choice.label}'s missing", [str(t) for t in sorted(drawn - held)])
        raise FileProblem(path, f"{'; '.join(p for p in (extra, lacking) if p)}; expected a trained table (shape, "
                          "sigma) for each table the encoding draws, and no other", f"{METADATA}: tables")  # fmt: skip


def _read_tensors(checkpoint: Checkpoint) -> dict[str, torch.Tensor]:
    """Every tensor of the checked file as float64, read by safetensors (no pickle) and checked whole and finite."""
    path = checkpoint.path
    data = read_file(path, checkpoint.size, EXPECTED)  # no more than its checked header describes
    try:
        tensors = load(data)
    except SafetensorError as error:
        raise FileProblem(path, f"not a readable safetensors file ({str(error)[:120]}); expected {EXPECTED}") from None
    shapes = {name: tuple(tensor.shape) for name, tensor in tensors.items()}
    if shapes != checkpoint.meta.tensor_shapes():
        raise FileProblem(path, f"its tensors changed while it was read; expected {EXPECTED}")
    broken = sorted(name for name, tensor in tensors.items() if not bool(torch.isfinite(tensor).all()))
    if broken:
        raise FileProblem(path, f"{some(len(broken), 'with NaN or infinite values', broken)}; expected finite "
                          "weights", "tensors")  # fmt: skip
    return {name: tensor.double() for name, tensor in tensors.items()}
