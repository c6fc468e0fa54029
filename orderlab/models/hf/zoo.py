"""`orderlab models`: every family of the zoo, its positions and ablations, and the real weights found locally.

Local weights are the packaged MiniLM (a bert) and the checkpoints in the Hugging Face cache whose
config.json names a family's model_type. Only file names and config.json are read: nothing is
loaded, nothing downloaded. Torch-free; compute only (report.models_table draws it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from orderlab.core.userfiles import read_bounded
from orderlab.families import FAMILIES
from orderlab.spec.extras import installed
from orderlab.spec.hub_cache import hub_cache
from orderlab.spec.model_specs import PACKAGED_MODELS


@dataclass(frozen=True)
class ZooEntry:
    family: str
    positions: str
    causal: bool
    ablations: dict[str, str]  # name -> what it does to this family
    hook_points: tuple[str, ...]  # named per layer: 1.input, 1.pattern, ... (orderlab trace reads them)
    weights: list[str]  # local real weights: "minilm (packaged)", "gpt2 (HF cache)", ...


def cached_models(cache: Path) -> dict[str, list[str]]:
    """model_type -> the cached repositories ('org/name') whose snapshots hold a config.json of that type."""
    found: dict[str, list[str]] = {}
    for config in sorted(cache.glob("models--*/snapshots/*/config.json")):
        try:
            model_type = json.loads(read_bounded(config, 2**20)).get("model_type")
        except (OSError, ValueError, AttributeError):
            continue  # not a readable JSON mapping: not a checkpoint we could load
        name = config.parents[2].name.removeprefix("models--").replace("--", "/")
        if isinstance(model_type, str) and name not in found.get(model_type, []):
            found.setdefault(model_type, []).append(name)
    return found


@dataclass(frozen=True)
class ModelCatalog:
    """The families that can run, and the plug-ins that cannot, each with why (one line)."""

    entries: list[ZooEntry]
    broken: dict[str, str]


def catalog(cache: Path | None = None) -> ModelCatalog:
    """One entry per family, in FAMILIES' order, with the weights this machine has for it; and the broken
    plug-ins."""
    cached = cached_models(cache or hub_cache())
    entries = []
    for family in FAMILIES.values():
        weights = [f"{name} (packaged)" for name, (package, _, _, of) in PACKAGED_MODELS.items()
                   if of == family.name and installed(package)]  # fmt: skip
        weights += [f"{name} (HF cache)" for kind in family.model_types for name in cached.get(kind, [])]
        entries.append(ZooEntry(family.name, family.positions, family.causal, family.ablations, family.hook_points(),
                                weights))  # fmt: skip
    return ModelCatalog(entries, dict(FAMILIES.broken))
