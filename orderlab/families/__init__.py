"""The model families of the zoo: one file each (bert.py, gpt2.py, ...), holding a `Family` (family.py), and one
FAMILIES.add line here per built-in. A package of one's own adds families through the entry-point group
`orderlab.families` (`name = "package.module:FAMILY"`), read the first time the registry is consulted.

Torch-free at import (a family imports torch and transformers inside its hooks), so the spec layer above reads this
registry directly to validate a family's name, ablations and seeded shape; the loader (models/hf) runs the hooks,
and a loaded transformers model finds its family by config.model_type (`FAMILIES.by_model_type`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import entry_points

from orderlab.core.registry import Registry
from orderlab.errors import OrderlabError
from orderlab.families import bert, bloom, deberta, distilbert, gpt2, gpt_neox, llama, opt, qwen2, roberta, t5
from orderlab.families.family import ABLATIONS, UNABLATED, Family

__all__ = ["ENTRY_POINTS", "FAMILIES", "Family"]

ENTRY_POINTS = "orderlab.families"


class FamilyRegistry(Registry[Family]):
    """Families by name: the built-ins, then those of installed packages' entry points (loaded once, on first use)."""

    def __init__(self) -> None:
        super().__init__("model family")
        self.discovered = False
        self.broken: dict[str, str] = {}  # plug-in name -> why it cannot be used, one line

    def add(self, family: Family) -> None:
        """Register `family`; ValueError if its ablations leave the shared vocabulary or lack the unablated one."""
        unknown = [name for name in family.ablations if name not in ABLATIONS]
        if unknown or UNABLATED not in family.ablations:
            raise ValueError(f"family {family.name!r}: ablations {list(family.ablations)}; expected '{UNABLATED}' "
                             f"and names among {', '.join(ABLATIONS)}")  # fmt: skip
        self.register(family.name, family)

    def discover(self) -> None:
        """Add the families installed packages declare (entry-point group `orderlab.families`). A plug-in that cannot
        be imported, is no Family or declares bad ablations is kept aside as broken, with one line saying why: it
        fails only the specs that name it (get), and `orderlab models` lists it, while every other family works."""
        self.discovered = True
        for point in entry_points(group=ENTRY_POINTS):
            if point.name in self._items or point.name in self.broken:
                continue
            problem = self._plug_in(point.name, point.load)
            if problem is not None:
                self.broken[point.name] = f"model family plug-in {point.name} ({point.value}): {problem}"

    def _plug_in(self, name: str, load: Callable[[], object]) -> str | None:
        """Import and add one plug-in's family; why it cannot be, or None once added."""
        try:
            family = load()
        except Exception as error:  # a stranger's module: any failure at import is one line
            return f"cannot be imported ({type(error).__name__}: {error}); expected a module defining a Family"
        if not isinstance(family, Family) or family.name != name:
            return f"got {type(family).__name__}; expected an orderlab.families.Family named {name!r}"
        try:
            self.add(family)
        except ValueError as error:
            return str(error)
        return None

    def _ready(self) -> None:
        if not self.discovered:
            self.discover()

    def get(self, name: str) -> Family:
        self._ready()
        if name in self.broken and name not in self._items:
            raise OrderlabError(self.broken[name])
        return super().get(name)

    def names(self) -> list[str]:
        self._ready()
        return super().names()

    def __contains__(self, name: object) -> bool:
        self._ready()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._ready()
        return super().__iter__()

    def values(self) -> list[Family]:
        """Every family, built-ins first, in registration order."""
        return [self.get(name) for name in self.names()]

    def by_model_type(self, model_type: str) -> Family:
        """The family whose checkpoints declare `model_type` (config.json, or a loaded model's config)."""
        found = next((family for family in self.values() if model_type in family.model_types), None)
        if found is None:
            types = ", ".join(sorted(kind for family in self.values() for kind in family.model_types))
            raise OrderlabError(f"no model family reads model_type {model_type!r}; expected one of {types} (a "
                                f"package adds a family through the entry-point group {ENTRY_POINTS!r})")  # fmt: skip
        return found


FAMILIES = FamilyRegistry()
FAMILIES.add(bert.FAMILY)
FAMILIES.add(gpt2.FAMILY)
FAMILIES.add(llama.FAMILY)
FAMILIES.add(bloom.FAMILY)
FAMILIES.add(t5.FAMILY)
FAMILIES.add(deberta.FAMILY)
FAMILIES.add(gpt_neox.FAMILY)
FAMILIES.add(opt.FAMILY)
FAMILIES.add(qwen2.FAMILY)
FAMILIES.add(roberta.FAMILY)
FAMILIES.add(distilbert.FAMILY)
