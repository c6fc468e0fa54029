"""A checkpoint folder's files, checked before transformers opens any, and how its weights fit the model built.

Every file transformers reads from a folder is a stranger's (core/userfiles.py). config.json is read strictly,
by the family's own keys (Family.read_config), and must declare the family; tokenizer and
generation files must be regular files of bounded size, the JSON ones JSON objects; weights must be safetensors
(a pickle is refused: loading one runs code from the file) whose headers the safetensors library accepts, so a
truncated or corrupt file is one line. Files holding fewer numbers than the measured parts need are refused before
the model is built (`refuse_too_few_weights`, on the meta device). After loading, `WeightsFit` sorts transformers'
own loading report (missing, unexpected and size-mismatched keys) into the parts the measurement runs (the base
model's embeddings, layers and norms; a causal LM's head when lm_logprob reads its logits) and the parts it does
not (a pooler, a task head): the first are refused unless the spec allows random initialisation, the second
recorded in manifest.json. Must not print.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orderlab.core.userfiles import FileModel, FileProblem, SafeName, read_head, read_json
from orderlab.errors import OrderlabError
from orderlab.families.family import Family, FamilyConfig

WEIGHTS, INDEX = "model.safetensors", "model.safetensors.index.json"
# Weights transformers would load with pickle (torch.load) or another framework: never loaded here.
FOREIGN_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack",
                   "model.ckpt.index")  # fmt: skip
# Files AutoTokenizer and from_pretrained read beside config.json and the weights, when present.
JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
              "generation_config.json", "chat_template.json")  # fmt: skip
OTHER_FILES = ("vocab.txt", "merges.txt", "spiece.model", "tokenizer.model", "sentencepiece.bpe.model", "spm.model",
               "chat_template.jinja")  # fmt: skip
TOKENIZER_LIMIT = 2**28  # bytes of one tokenizer file: the largest real tokenizer.json files are ~35 MB
EXAMPLES = 3  # names shown of each kind of misfit


class ModelFolderError(OrderlabError):
    """A model folder does not hold what the spec says: other weights, or a tokenizer that does not know its words."""


class JsonObject(FileModel):
    """Any JSON object: a tokenizer file's keys are the tokenizers library's to read."""


class ShardIndex(FileModel):
    """model.safetensors.index.json: which shard file holds each tensor (file names held to the name rule)."""

    weight_map: dict[str, SafeName]


def checked_folder(folder: Path, family: Family) -> FamilyConfig:
    """Check every file transformers will read from `folder` (FileProblem, one line, for the first that is wrong)
    and return its config as `family` reads it."""
    config = family.read_config(folder)
    for name in JSON_FILES:
        if present(folder / name):
            read_json(folder / name, JsonObject, "a tokenizer or generation file (a JSON object)", TOKENIZER_LIMIT)
    for name in OTHER_FILES:
        if present(folder / name):
            checked_size(folder / name, TOKENIZER_LIMIT, "a tokenizer file")
    for path in weight_files(folder):
        check_safetensors(path)
    return config


def present(path: Path) -> bool:
    """Whether `path` names anything, a dangling link included (it is then refused as missing, not skipped)."""
    return path.is_symlink() or path.exists()


def checked_size(path: Path, limit: int, expected: str) -> int:
    """The size of `path`, a regular file of at most `limit` bytes (never opened in a way that could block)."""
    _, size = read_head(path, 0, expected)
    if size > limit:
        raise FileProblem(path, f"{size:,} bytes, over the limit of {limit:,}; expected {expected}")
    return size


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a folder: model.safetensors, or the shards its index names. Pickled weights alone
    are refused, never loaded."""
    if present(folder / INDEX):
        index = read_json(folder / INDEX, ShardIndex, "a safetensors index (weight_map: tensor -> shard file)")
        return [folder / name for name in sorted(set(index.weight_map.values()))]
    if present(folder / WEIGHTS):
        return [folder / WEIGHTS]
    foreign = next((name for name in FOREIGN_WEIGHTS if present(folder / name)), None)
    if foreign is not None:
        raise FileProblem(folder / foreign, f"weights in a format orderlab does not load (a pickle runs code when "
                          f"loaded); expected {WEIGHTS} (transformers writes it: save_pretrained(folder))")  # fmt: skip
    raise FileProblem(folder / WEIGHTS, "no such file; expected the model's weights as safetensors")


def check_safetensors(path: Path) -> None:
    """A regular file whose header the safetensors library accepts: a truncated or corrupt file is one line."""
    from safetensors import SafetensorError, safe_open  # lazy: the hf extra

    read_head(path, 0, "the model's weights (safetensors)")
    try:
        with safe_open(path, framework="pt") as weights:
            weights.keys()
    except (SafetensorError, OSError, ValueError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise FileProblem(path, f"not a complete safetensors file ({reason}); expected the model's weights as "
                          "saved") from None  # fmt: skip


@dataclass(frozen=True)
class WeightsFit:
    """How a checkpoint's weights fit the model transformers built from its config, from its loading report.

    The measured parts are the base model's children but its pooler, and the heads beside it when their output is
    read (a causal LM's logits, for lm_logprob); names are compared without the base model's prefix (`bert.`,
    `transformer.`), which checkpoints of base models and of models with heads spell differently.
    """

    measured: int  # tensors the measurement runs
    missing: list[str]  # measured tensors the files lack: transformers leaves them as initialised
    mismatched: dict[str, str]  # measured tensors the files hold in another shape -> "9x16 in the files, ..."
    unexpected: list[str]  # tensors in the files under measured parts that the model has no place for
    missing_unused: list[str]  # tensors of unmeasured parts the files lack (or hold in another shape)
    extra_unused: list[str]  # tensors in the files of no part the model runs (a task head, a pooler)

    @property
    def random(self) -> list[str]:
        """The measured tensors left as initialised: the ones allow_random_init lets through."""
        return sorted([*self.missing, *self.mismatched])

    def manifest(self) -> dict[str, list[str]]:
        """manifest.json's `model_files`."""
        return {"missing_unused": self.missing_unused, "extra_unused": self.extra_unused, "random_init": self.random}

    def refusal(self, folder: Path, family: str, allow_random_init: bool) -> ModelFolderError | None:
        """The one line that refuses these weights, or None: missing and mismatched tensors pass only with
        allow_random_init; tensors the model has no place for never do (nothing initialised stands in for them)."""
        faults = [_some(len(self.unexpected), "in the files but not in the model", self.unexpected)]
        if not allow_random_init:
            shapes = [f"{name}: {shapes}" for name, shapes in self.mismatched.items()]
            faults = [_some(len(self.missing), "missing", self.missing),
                      _some(len(shapes), "of another shape", shapes), *faults]  # fmt: skip
        shown = [fault for fault in faults if fault]
        if not shown:
            return None
        hint = "" if allow_random_init else " (or model.allow_random_init: true to measure them randomly initialised)"
        return ModelFolderError(
            f"{folder}: weights do not fit the {family} model its config.json describes (of the {self.measured} "
            f"tensors measured): {'; '.join(shown)}; expected the weights saved with this config{hint}"
        )


def measured_parts(model: Any, heads_read: bool, unused: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a parameter name (the model's, or a checkpoint's without the base model's prefix) lies in a part the
    measurement runs. `unused`: children of the base model the measurement never runs (BERT's pooler)."""
    base = model.base_model
    prefix = "" if base is model else f"{model.base_model_prefix}."
    parts = tuple(f"{name}." for name, _ in base.named_children() if name not in unused)
    heads = tuple(f"{name}." for name, child in model.named_children() if child is not base) if heads_read else ()

    def measured(key: str) -> bool:
        return key.removeprefix(prefix).startswith(parts) or key.startswith(heads)

    return measured


def refuse_too_few_weights(
    folder: Path, model_class: Any, implementation: str | None, family: str, heads_read: bool, unused: tuple[str, ...]
) -> None:
    """ModelFolderError (one line) before the model is built, if the folder's safetensors files hold fewer numbers
    than the parts the measurement runs need: some of them must then be missing or smaller, which `WeightsFit`
    would refuse only after from_pretrained had built (and initialised) the whole model, gigabytes for a config.json
    that describes a big model. Counted from the model built on the meta device (no memory) and the files' headers,
    so names that transformers renames while loading count alike; a fit it cannot decide is left to WeightsFit."""
    import torch  # lazy, as the rest of the hf extra

    config = model_class.config_class.from_pretrained(folder, local_files_only=True)
    with torch.device("meta"):
        skeleton = model_class._from_config(config, attn_implementation=implementation)
    measured = measured_parts(skeleton, heads_read, unused)
    needed = {name: parameter.numel() for name, parameter in skeleton.named_parameters() if measured(name)}
    stored = stored_sizes(weight_files(folder))
    held = sum(stored.values())
    if held < sum(needed.values()):
        prefix = f"{skeleton.base_model_prefix}."
        absent = [name for name in needed if name not in stored and name.removeprefix(prefix) not in stored]
        named = f": {_some(len(absent), 'missing', absent)}" if absent else ""  # names a load may rename: none shown
        raise ModelFolderError(
            f"{folder}: weights do not fit the {family} model its config.json describes: its files hold {held:,} "
            f"numbers, the {len(needed)} tensors measured need {sum(needed.values()):,}{named} (checked before "
            "building the model); expected the weights saved with this config (or model.allow_random_init: true "
            "to measure the missing ones randomly initialised)"
        )


def stored_sizes(paths: list[Path]) -> dict[str, int]:
    """How many numbers each tensor of the safetensors files holds, from their headers (no tensor is read)."""
    from safetensors import safe_open  # lazy: the hf extra

    sizes = {}
    for path in paths:
        with safe_open(path, framework="pt") as weights:
            for name in weights.keys():  # noqa: SIM118 (safe_open is no mapping)
                sizes[name] = math.prod(weights.get_slice(name).get_shape())
    return sizes


def weights_fit(model: Any, info: dict[str, Any], heads_read: bool, unused: tuple[str, ...]) -> WeightsFit:
    """Sort transformers' loading report (output_loading_info=True, ignore_mismatched_sizes=True) into measured
    and unmeasured parts. `unused`: children of the base model the measurement never runs (BERT's pooler)."""
    measured = measured_parts(model, heads_read, unused)
    names = [name for name, _ in model.named_parameters()]
    mismatched = {key: f"{_dims(file)} in the files, {_dims(built)} in the model"
                  for key, file, built in sorted(info["mismatched_keys"])}  # fmt: skip
    missing = sorted(info["missing_keys"])
    unexpected = sorted(info["unexpected_keys"])
    return WeightsFit(
        measured=sum(measured(name) for name in names),
        missing=[key for key in missing if measured(key)],
        mismatched={key: shapes for key, shapes in mismatched.items() if measured(key)},
        unexpected=[key for key in unexpected if measured(key)],
        missing_unused=sorted([key for key in [*missing, *mismatched] if not measured(key)]),
        extra_unused=[key for key in unexpected if not measured(key)],
    )


def _dims(shape: Any) -> str:
    """torch.Size([9, 16]) -> '9x16'."""
    return "x".join(str(size) for size in shape) or "a scalar"


def _some(count: int, what: str, names: list[str]) -> str:
    if not count:
        return ""
    shown = ", ".join(names[:EXAMPLES]) + (", ..." if count > EXAMPLES else "")
    return f"{count} {what} ({shown})"


def unknown_words(tokenizer: Any, words: list[str]) -> list[str]:
    """The words the tokenizer maps, whole or in part, to its unknown token (none if it has no such token)."""
    unknown_id = tokenizer.unk_token_id
    if unknown_id is None or not words:
        return []
    encoded = tokenizer([[word] for word in words], is_split_into_words=True, add_special_tokens=False)
    return [word for word, ids in zip(words, encoded["input_ids"], strict=True) if unknown_id in ids or not ids]


def refuse_unknown_words(folder: Path | str, tokenizer: Any, words: list[str]) -> None:
    """ModelFolderError (one line, counts and examples) if any spec word is unknown to the tokenizer: its rows would
    measure the unknown token's vector wherever the word stands, a confident answer about other words."""
    unknown = unknown_words(tokenizer, sorted(set(words)))
    if unknown:
        shown = ", ".join(repr(word) for word in unknown[:EXAMPLES]) + (", ..." if len(unknown) > EXAMPLES else "")
        raise ModelFolderError(
            f"{folder}: the tokenizer does not know {len(unknown)} of the spec's {len(set(words))} words ({shown}: "
            f"they map to {tokenizer.unk_token!r} or to nothing); expected a tokenizer that knows every word (is its "
            "tokenizer.json missing, or another model's?)"
        )
