"""Trained stacks to and from safetensors files: results/<name>/checkpoints/<encoding>.safetensors.

The tensors are the layers' weights, the encoding's trained tables and the read-out; the metadata
(orderlab/spec/checkpoint_meta.py reads it without torch) holds what rebuilds the stack around them: its model fields,
the encoding, the seed its word vectors come from and the `train:` block.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from safetensors.torch import load_file, save_file

from orderlab.models.attention_stack import LayerWeights
from orderlab.spec.checkpoint_meta import METADATA_KEY, read_metadata
from orderlab.spec.schema import EncodingChoice, Spec
from orderlab.spec.sweep import Configuration
from orderlab.train.train import TrainedStack

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


def load_checkpoint(path: Path) -> TrainedStack:
    """The trained stack a checkpoint holds (float64 tensors, as training left them)."""
    metadata: dict[str, Any] = read_metadata(path)
    tensors = load_file(str(path))
    layers = [
        LayerWeights(*(tensors[f"layers.{i}.{f.name}"] for f in fields(LayerWeights)))
        for i in range(metadata["model"]["n_layers"])
    ]
    tables = {
        (tuple(shape), float(sigma)): tensors[f"tables.{i}"] for i, (shape, sigma) in enumerate(metadata["tables"])
    }
    choice = EncodingChoice(name=metadata["encoding"]["name"], params=metadata["encoding"]["params"])
    return TrainedStack(choice, layers, tables, tensors["head"], tensors["head_bias"], [])
