"""`orderlab validate`: each spec checked without running it (and, with --plan, what its run will cost)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.errors import OrderlabError
from orderlab.plan.limits import validate_limits
from orderlab.spec.load import load_spec
from orderlab.spec.schema import Spec

if TYPE_CHECKING:
    from orderlab.plan.estimate import PricedPlan


@dataclass(frozen=True)
class Validated:
    """One spec file's verdict: the spec, or the one-line error that refused it."""

    path: Path
    spec: Spec | None
    error: str | None
    plan: PricedPlan | None = None  # with --plan: memory, sequences, time, CSV sizes per combination


def validate(specs: list[Path], plan: bool = False, device: str = "cpu") -> list[Validated]:
    """Every spec checked (each sweep combination, the cost against this machine); errors returned, not raised.
    plan: each spec's cost lines too, priced on `device` (cpu, cuda or auto)."""
    found = []
    for path in specs:
        try:
            loaded = validate_limits(load_spec(path))
        except OrderlabError as error:
            found.append(Validated(path, None, str(error)))
        else:
            found.append(Validated(path, loaded.spec, None, priced(loaded.spec, path, device) if plan else None))
    return found


def priced(spec: Spec, path: Path, device: str) -> PricedPlan:
    """`validate --plan`'s data for one spec on `device` (pricing imports torch, so only --plan loads it)."""
    from orderlab.commands.pricing import priced_plan
    from orderlab.models.devices import resolve_device

    return priced_plan(spec, path, resolve_device(device))
