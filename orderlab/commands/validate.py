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
    priced = None
    if plan:
        from orderlab.commands.pricing import plan_report  # lazy: it imports torch to measure the device
        from orderlab.models.devices import resolve_device

        where = resolve_device(device)
        priced = lambda spec, path: plan_report(spec, path, where)  # noqa: E731
    found = []
    for path in specs:
        try:
            loaded = load_spec(path)
        except OrderlabError as error:
            found.append(Validated(path, None, str(error)))
        else:
            found.append(Validated(path, loaded.spec, None, priced(loaded.spec, path) if priced else []))
    return found
