"""`orderlab validate`: each spec checked without running it (and, with --plan, what its run will cost)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orderlab.errors import OrderlabError
from orderlab.plan.load import load_spec
from orderlab.spec.schema import Spec


@dataclass(frozen=True)
class Validated:
    """One spec file's verdict: the spec, or the one-line error that refused it."""

    path: Path
    spec: Spec | None
    error: str | None
    plan: list[str] = field(default_factory=list)  # with --plan: memory, sequences, time, CSV sizes per combination


def validate(specs: list[Path], plan: bool = False, device: str = "cpu") -> list[Validated]:
    """Every spec checked (each sweep combination, the cost against this machine); errors returned, not raised.
    plan: each spec's cost lines too, priced on `device` (cpu, cuda or auto)."""
    found = []
    for path in specs:
        try:
            loaded = load_spec(path)
        except OrderlabError as error:
            found.append(Validated(path, None, str(error)))
        else:
            found.append(Validated(path, loaded.spec, None, cost_lines(loaded.spec, path, device) if plan else []))
    return found


def cost_lines(spec: Spec, path: Path, device: str) -> list[str]:
    """`validate --plan`'s lines for one spec on `device` (pricing imports torch, so only --plan loads it)."""
    from orderlab.commands.pricing import plan_report
    from orderlab.models.devices import resolve_device

    return plan_report(spec, path, resolve_device(device))
