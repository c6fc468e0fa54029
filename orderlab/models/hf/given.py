"""A transformers model object passed from Python (orderlab.api.run(spec, model=...)), measured as a loaded folder is.

`user_model` checks the object (a transformers model of one of the zoo's families, with its tokenizer) and records
it for the spec and manifest.json (spec/model_specs.ModelObject: its class, config and a hash of its weights). Its
weights are never written: the backend runs the object itself where the run's dtype and device are its own (else a
converted copy), ablations hook around each pass (orderlab/families), and `evaluating` switches it to eval mode
for the run only, each module's training flag restored afterwards.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from orderlab.errors import OrderlabError
from orderlab.families import FAMILIES
from orderlab.spec.model_specs import ADDING_A_FAMILY, ModelObject, family_of


@dataclass(frozen=True)
class UserModel:
    """The object, its tokenizer and what the spec records of it."""

    model: Any  # a transformers PreTrainedModel
    tokenizer: Any  # its tokenizer (a transformers tokenizer: it splits words given one by one)
    record: ModelObject


def given_model(model: object, tokenizer: object) -> UserModel | None:
    """api's model= and tokenizer=: None when neither is given (the spec's own model runs); a tokenizer alone is
    refused rather than ignored, since the run would measure a seeded model the user did not mean."""
    if model is None:
        if tokenizer is not None:
            raise OrderlabError("tokenizer: given without model=; expected model= and its tokenizer= together")
        return None
    return user_model(model, tokenizer)


def user_model(model: object, tokenizer: object) -> UserModel:
    """The model object and its tokenizer, checked (before any forward pass) and recorded; OrderlabError (one line)
    for what orderlab cannot measure."""
    from transformers import PreTrainedTokenizerBase

    name = type(model).__name__
    if isinstance(model, torch.nn.Module):
        _loaded(model)
    record = model_record(model)
    if not isinstance(tokenizer, PreTrainedTokenizerBase):
        raise OrderlabError(f"tokenizer: got {_kind(tokenizer)}; expected the {name}'s tokenizer (a transformers "
                            "tokenizer, e.g. AutoTokenizer.from_pretrained(folder))")  # fmt: skip
    _fits(model, tokenizer)
    _layers_match(model)
    return UserModel(model, tokenizer, record)


def _kind(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__}" if not isinstance(value, type) else "a class"


def _loaded(model: torch.nn.Module) -> None:
    """Weights on the meta device have no values (a model made under init_empty_weights, never loaded)."""
    empty = next((name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta), None)
    if empty is not None:
        raise OrderlabError(f"model: {empty} is on the meta device (no values: made under init_empty_weights and "
                            "never loaded?); expected a model with its weights loaded")  # fmt: skip


def _fits(model: Any, tokenizer: Any) -> None:
    """The tokenizer's ids index the model's token table, and its heads share key-value heads evenly."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        raise OrderlabError(f"tokenizer: {len(tokenizer)} token ids; the model's token table (get_input_embeddings) "
                            f"has {rows} rows; expected a tokenizer whose ids the model can look up")  # fmt: skip
    heads = getattr(model.config, "num_attention_heads", None)
    shared = getattr(model.config, "num_key_value_heads", None)
    if isinstance(heads, int) and isinstance(shared, int) and (shared < 1 or heads % shared):
        raise OrderlabError(f"model: config.num_attention_heads {heads} with num_key_value_heads {shared}; expected "
                            "key-value heads that divide the heads")  # fmt: skip


def _layers_match(model: Any) -> None:
    """The model's list of layers (the first ModuleList: bert's encoder.layer, gpt2's transformer.h, t5's
    encoder.block) holds as many as its config says: a model with layers cut or added and its config left as it was
    ran the config's count of layers into an IndexError, or measured fewer than it reported."""
    count = getattr(model.config, "num_hidden_layers", None)
    name, blocks = next(((n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.ModuleList)), ("", None))
    if isinstance(count, int) and blocks is not None and len(blocks) != count:
        raise OrderlabError(f"model: {name} holds {len(blocks)} layers; config.num_hidden_layers is {count}; expected "
                            "as many layers as the config says")  # fmt: skip


def model_record(model: object) -> ModelObject:
    """What the spec and manifest.json record of a model object: a transformers model of a supported family."""
    name = type(model).__name__
    config: Any = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or not hasattr(config, "to_json_string"):
        raise OrderlabError(
            f"model: a {name} is not a transformers model (no config); expected a transformers model of a supported "
            f"family ({', '.join(FAMILIES.names())}); {ADDING_A_FAMILY}"
        )
    family = family_of(getattr(config, "model_type", None), name)
    if family == "t5" and name != FAMILIES.get(family).model_class:
        raise OrderlabError(f"model: a {name}; orderlab measures T5's encoder: expected a T5EncoderModel")
    return ModelObject(
        model_class=f"{type(model).__module__}.{type(model).__qualname__}",
        config=json.loads(config.to_json_string()),
        weights_sha256=weights_sha256(model),
    )


def weights_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over every parameter's and buffer's name, dtype, shape and bytes, in the module's order."""
    digest = hashlib.sha256()
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        data = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        digest.update(data.numpy().data)
    return digest.hexdigest()


@contextmanager
def evaluating(model: torch.nn.Module) -> Iterator[None]:
    """While open, `model` is in eval mode (no dropout); each module's own training flag is restored on exit."""
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, training in modes:
            module.training = training


@contextmanager
def eager_attention(model: Any, wanted: bool) -> Iterator[None]:
    """While open (if wanted), `model` runs eager attention, the implementation that returns its probabilities; its
    own implementation restored on exit."""
    own = model.config._attn_implementation
    if not wanted or own == "eager":
        yield
        return
    model.set_attn_implementation("eager")
    try:
        yield
    finally:
        model.set_attn_implementation(own)
