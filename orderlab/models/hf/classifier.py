"""A sequence-classification model of the zoo's families (transformers' *ForSequenceClassification): built seeded with
a seeded head, loaded from a folder that holds its trained head, or a model object passed from Python; run under a
position ablation (the family's hooks, as models/hf/loader.py runs its base models), its logits in float64.

A folder's head must be in its weights: a classification head initialised at random would be measured as if trained,
so a checkpoint without one is refused (one line), never filled in, unless orderlab fits it (`HeadToFit`: a linear
classifier layer on the frozen encoder, models/hf/head_fit.py) before anything is measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from orderlab.errors import OrderlabError, first_line
from orderlab.families import FAMILIES
from orderlab.families.family import SeededSize
from orderlab.models.hf.activations import inplace_activations
from orderlab.models.hf.folder import ModelFolderError, checked_folder
from orderlab.models.hf.given import UserModel
from orderlab.models.hf.head_fit import HeadToFit, fit_linear_head
from orderlab.models.hf.loader import (
    Seeded,
    converted_copy,
    drawn_in,
    import_transformers,
    transformers_class,
    word_level_tokenizer,
)
from orderlab.models.kept_draws import built_drawing_kept

Words = Sequence[str]
Encoded = dict[str, list[list[int]]]  # a tokenizer's columns (input_ids, attention_mask, ...), per sequence


class ClassifierBackend:
    """A tokenizer and a sequence-classification model in eval mode; `logits` runs a batch of (text, pair) word lists
    under the ablation set by `set_positions`."""

    def __init__(
        self,
        source: Path | Seeded | UserModel | HeadToFit,
        family: str,
        dtype: str = "float32",
        device: torch.device | str = "cpu",
        id2label: Sequence[str] = (),
    ):
        transformers = import_transformers()
        self.code = FAMILIES.get(family)
        self.device, self.dtype = torch.device(device), getattr(torch, dtype)
        self.ablation, self.seed, self.given = "trained", 0, False
        if isinstance(source, Seeded):
            self.tokenizer = word_level_tokenizer(transformers, source.words, self.code.causal, self.code.start_token)
            size = SeededSize(source.d_model, source.n_heads, source.n_layers, max(len(self.tokenizer), source.vocab))
            config = transformers_class(transformers, self.code.config_class, self.code.name)(
                **self.code.seeded_config(size), num_labels=len(id2label),
                id2label=dict(enumerate(id2label)), label2id={name: i for i, name in enumerate(id2label)},
                pad_token_id=self.tokenizer.pad_token_id,
            )  # fmt: skip
            with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's random state left alone
                torch.manual_seed(source.seed)
                self.model = built_drawing_kept(  # the same weights without the draws overwritten (kept_draws.py)
                    lambda: _auto_class(transformers).from_config(config, **drawn_in(dtype))
                )
        elif isinstance(source, UserModel):  # the object itself, never written; a copy in another dtype or device
            self.tokenizer, self.given = source.tokenizer, True
            if not type(source.model).__name__.endswith("ForSequenceClassification"):
                raise OrderlabError(f"model: a {type(source.model).__name__} has no classification head; expected a "
                                    "*ForSequenceClassification model for dataset inputs")  # fmt: skip
            weight = next(source.model.parameters())
            own = weight.dtype == self.dtype and weight.device == self.device
            self.model = source.model if own else converted_copy(source.model, self.dtype).to(self.device)
            return
        elif isinstance(source, HeadToFit):
            self.tokenizer, self.model = _load_folder(transformers, source.folder, self.code.name, source.labels)
        else:
            self.tokenizer, self.model = _load_folder(transformers, source, self.code.name)
        inplace_activations(self.model)  # the same numbers in fewer buffers (activations.py)
        self.model.to(device=self.device, dtype=self.dtype).eval()
        if isinstance(source, HeadToFit):
            self._fit_head(source)

    def _fit_head(self, source: HeadToFit) -> None:
        """The classifier layer fitted on the examples' pooled outputs (its inputs, under the trained positions)."""
        layer = self.model.classifier
        pooled: list[torch.Tensor] = []
        handle = layer.register_forward_pre_hook(lambda _layer, args: pooled.append(args[0].double()))
        try:
            for start in range(0, len(source.texts), source.batch):
                chunk = slice(start, start + source.batch)
                self.logits(source.texts[chunk], None if source.pairs is None else source.pairs[chunk])
        finally:
            handle.remove()
        fitted = fit_linear_head(torch.cat(pooled), torch.tensor(list(source.gold)), len(source.labels),
                                 source.epochs, source.lr)  # fmt: skip
        with torch.no_grad():
            layer.weight.copy_(fitted[:, :-1])
            layer.bias.copy_(fitted[:, -1])

    @property
    def id2label(self) -> list[str]:
        """The head's label names, in id order (its config's id2label)."""
        names = self.model.config.id2label
        return [str(names[index]) for index in range(int(self.model.config.num_labels))]

    def set_positions(self, ablation: str, seed: int) -> None:
        self.ablation, self.seed = ablation, seed

    def twin(self, dtype: str) -> ClassifierBackend:
        """The same model in another precision (float64 for float32: its round-off), sharing the tokenizer."""
        other = object.__new__(ClassifierBackend)
        other.__dict__.update(self.__dict__)
        other.dtype = getattr(torch, dtype)
        other.model = converted_copy(self.model, other.dtype).eval()
        return other

    def encoded(self, texts: Sequence[Words], pairs: Sequence[Words] | None) -> Encoded:
        """Each sequence's token ids (and the tokenizer's other columns: attention mask, token types) as `logits`
        runs it, unpadded: words tokenized one by one (is_split_into_words), so a shuffled sentence has exactly the
        sub-tokens the tokenizer gives it. Tokenized once, then run in batches by `run` (a batch padded from these
        ids is the one the tokenizer pads itself, in under a tenth of the time it takes to tokenize it again)."""
        found = self.tokenizer(
            [list(words) for words in texts], None if pairs is None else [list(words) for words in pairs],
            is_split_into_words=True,
        )  # fmt: skip
        return {key: list(values) for key, values in found.items()}

    def logits(self, texts: Sequence[Words], pairs: Sequence[Words] | None) -> torch.Tensor:
        """(B, num_labels) float64 logits of each sequence (tokenized as `encoded` says)."""
        return self.run(self.encoded(texts, pairs))

    def run(self, encoded: Encoded) -> torch.Tensor:
        """(B, num_labels) float64 logits of a batch of `encoded`'s sequences, padded as the tokenizer pads (its pad
        id and side), with the attention mask."""
        padded = self.tokenizer.pad(encoded, return_tensors="np")  # numpy, then torch: a third of "pt"'s time
        inputs = {key: torch.from_numpy(value).to(self.device) for key, value in padded.items()}
        limit = self.code.max_tokens(self.model.config)
        if limit is not None and inputs["input_ids"].shape[1] > limit:
            raise OrderlabError(f"an example of {inputs['input_ids'].shape[1]} tokens; the model's positions cover "
                                f"{limit}; expected shorter examples")  # fmt: skip
        with torch.inference_mode(), self.code.ablate(self.model, self.ablation, self.seed):
            out = self.model(**inputs)
        logits: torch.Tensor = out.logits.double()
        return logits


def _auto_class(transformers: Any) -> Any:
    return transformers.AutoModelForSequenceClassification


def _load_folder(transformers: Any, folder: Path, family: str, fitted: Sequence[str] = ()) -> tuple[Any, Any]:
    """The tokenizer and classification model of a checked folder (safetensors only); refused if its weights lack the
    head or any part the pass runs. fitted: the labels of a head orderlab fits, whose layer alone may be missing (it
    must be one linear layer, `classifier`)."""
    code = FAMILIES.get(family)
    checked_folder(folder, code)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True,
                                                               **dict(code.tokenizer_options))  # fmt: skip
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            labels = {"num_labels": len(fitted), "id2label": dict(enumerate(fitted)),
                      "label2id": {name: i for i, name in enumerate(fitted)}} if fitted else {}  # fmt: skip
            model, info = _auto_class(transformers).from_pretrained(
                folder, local_files_only=True, use_safetensors=True, output_loading_info=True, **labels
            )
    except (OSError, ValueError, RuntimeError) as error:
        raise ModelFolderError(f"cannot load a classification model from {folder}: {first_line(error)}") from None
    if fitted and not isinstance(getattr(model, "classifier", None), torch.nn.Linear):
        raise ModelFolderError(f"{folder}: a {type(model).__name__}'s head is not one linear layer (classifier); "
                               "expected a family whose head orderlab can fit (bert)")  # fmt: skip
    head = {"classifier.weight", "classifier.bias"} if fitted else set()
    missing = [name for name in info.get("missing_keys", []) if not name.endswith("position_ids") and name not in head]
    if missing:
        raise ModelFolderError(f"{folder}: its weights lack {missing[0]}" + (f" and {len(missing) - 1} more" if
                               len(missing) > 1 else "") + "; expected a trained *ForSequenceClassification "
                               "checkpoint (its head included)")  # fmt: skip
    return tokenizer, model
