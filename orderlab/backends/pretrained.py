"""Loading a BERT-style model offline and running it with an ablated position table.

Nothing is downloaded, ever: HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before transformers is
imported and every load passes local_files_only. The model's own tokenizer splits each
white-space word separately (is_split_into_words), so a reordered sentence has exactly the
sub-tokens the tokenizer would give it, and words can be moved as groups of sub-tokens.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch

from orderlab.backends.ablations import position_table
from orderlab.backends.extra import MissingExtraError, missing_message, packaged_model_folder
from orderlab.backends.grouping import WordTokens, spans_from_word_ids
from orderlab.backends.specs import HFModelSpec, PretrainedModelSpec
from orderlab.batching import aligned_batch
from orderlab.errors import OrderlabError


def import_transformers() -> ModuleType:
    """transformers, switched to offline mode and silent; MissingExtraError if the extra is absent."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import transformers
    except ImportError:
        raise MissingExtraError(missing_message("hf", "transformers")) from None
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def model_folder(model: PretrainedModelSpec | HFModelSpec, spec_file: Path) -> Path:
    if isinstance(model, PretrainedModelSpec):
        return packaged_model_folder(model.name)
    return spec_file.parent / model.path


@dataclass
class Forward:
    hidden: list[torch.Tensor]  # n_layers + 1 tensors (B, T, d); hidden[0]: embeddings output
    attention: list[torch.Tensor]  # n_layers tensors (B, h, T, T) when asked for, else empty


class PretrainedBackend:
    """A tokenizer and an encoder in eval mode whose position table can be swapped in memory."""

    def __init__(
        self, folder: Path, dtype: str = "float32", device: torch.device | str = "cpu", attention: bool = False
    ):
        transformers = import_transformers()
        self.folder, self.device, self.dtype = folder, torch.device(device), getattr(torch, dtype)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
            self.model = transformers.AutoModel.from_pretrained(
                folder, local_files_only=True, attn_implementation="eager" if attention else "sdpa"
            )
        except (OSError, ValueError) as error:
            raise OrderlabError(f"cannot load a model from {folder}: {str(error).splitlines()[0]}") from None
        self.model.to(device=self.device, dtype=self.dtype).eval()
        table = getattr(getattr(self.model, "embeddings", None), "position_embeddings", None)
        if not isinstance(table, torch.nn.Embedding):
            raise OrderlabError(f"{folder}: expected a BERT-style model with an absolute position embedding table")
        self.table = table
        self.trained = table.weight.detach().clone()  # (max_positions, d)
        self.ablation = "trained"

    def twin(self, dtype: str) -> PretrainedBackend:
        """The same model in another precision, sharing the tokenizer: its passes measure this one's round-off."""
        other = copy.copy(self)
        other.dtype = getattr(torch, dtype)
        other.model = copy.deepcopy(self.model).to(dtype=other.dtype)
        other.table = other.model.embeddings.position_embeddings
        other.trained = self.trained.to(other.dtype)
        return other

    @property
    def max_tokens(self) -> int:
        return self.trained.shape[0]

    def set_positions(self, ablation: str, seed: int) -> None:
        """Swap in the position table of `ablation` (in memory; the trained one is kept aside)."""
        with torch.no_grad():
            self.table.weight.copy_(position_table(ablation, self.trained, seed))
        self.ablation = ablation

    def word_tokens(self, words: list[str]) -> WordTokens:
        """Tokenize white-space words one by one, keeping each word's span of sub-tokens."""
        encoded = self.tokenizer(words, is_split_into_words=True, add_special_tokens=True)
        try:
            spans = spans_from_word_ids(encoded.word_ids(), len(words))
        except ValueError as error:
            raise OrderlabError(f"cannot split {' '.join(words)!r} into words: {error}") from None
        if len(encoded["input_ids"]) > self.max_tokens:
            raise OrderlabError(
                f"{' '.join(words[:6])}...: {len(encoded['input_ids'])} tokens; expected at most {self.max_tokens}"
            )
        return WordTokens(tuple(encoded["input_ids"]), spans)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, attention: bool = False) -> Forward:
        """ids, mask: (B, T). All hidden states (and attention maps if asked for).

        The batch is padded (repeating its first row) so that B * T fills whole matmul row tiles
        (see orderlab/batching.py): a sequence's numbers then do not depend on the batch it is in
        or on the thread count, so the identity permutation matches its reference pass exactly.
        """
        count = ids.shape[0]
        ids = aligned_batch(ids.to(self.device))
        mask = None if mask is None else aligned_batch(mask.to(self.device))
        out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=attention)
        return Forward([h[:count] for h in out.hidden_states], [a[:count] for a in out.attentions] if attention else [])

    def last_hidden(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ids, mask: (B, T) -> (B, T, d), the last layer only (corpus mode); batch aligned as in `forward`."""
        count = ids.shape[0]
        ids, mask = aligned_batch(ids.to(self.device)), aligned_batch(mask.to(self.device))
        hidden: torch.Tensor = self.model(input_ids=ids, attention_mask=mask).last_hidden_state
        return hidden[:count]

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id or 0)
