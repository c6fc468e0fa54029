"""A model named by its hub name (`model: {kind: hf, name: ORG/NAME}`), found in the local Hugging Face cache,
offline: nothing is downloaded, ever. Torch-free.

huggingface_hub keeps a repository under HF_HUB_CACHE (else HF_HOME/hub, else ~/.cache/huggingface/hub) as
models--ORG--NAME/snapshots/REVISION/, its files links into the repository's blobs/, and refs/main naming the
revision last downloaded. The snapshot found is then checked as any model folder is (models/hf/folder.py): every
file it names must resolve to a regular file of bounded size, the weights must fit its config.json.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from orderlab.core.userfiles import folder_name_problem, read_text

HUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")
REF_LIMIT = 256  # bytes of refs/main: a 40-character commit hash


def hub_cache() -> Path:
    """Where huggingface_hub keeps downloaded models: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home) / "hub"


def hub_name_problem(name: str) -> str | None:
    """Why `name` is no hub name (ORG/NAME or NAME: letters, digits, '.', '_', '-'; no '..'), or None."""
    if not HUB_NAME.fullmatch(name) or ".." in name:
        return f"got {name[:100]!r}; expected a hub name such as EleutherAI/pythia-70m"
    return None


def cached_snapshot(name: str) -> Path:
    """The snapshot folder of hub model `name` in the local cache: the revision refs/main names, else the only one.
    ValueError (one line: where it looked, how to fill the cache) when there is none, or several and no refs/main."""
    repository = hub_cache() / ("models--" + name.replace("/", "--"))
    snapshots = repository / "snapshots"
    ref = repository / "refs" / "main"
    if ref.is_file():
        revision = read_text(ref, REF_LIMIT, "a revision (refs/main: a commit hash)").strip()
        problem = folder_name_problem(revision)
        if problem is None and (snapshots / revision).is_dir():
            return snapshots / revision
        found = [snapshots / revision] if problem is None else []
    else:
        found = sorted(path for path in snapshots.iterdir() if path.is_dir()) if snapshots.is_dir() else []
        if len(found) == 1:
            return found[0]
    if len(found) > 1:
        raise ValueError(f"{name}: {len(found)} snapshots in {snapshots} and no refs/main to choose one; expected one "
                         "(delete the others, or name the folder as path:)")  # fmt: skip
    raise ValueError(f"{name} is not in the local Hugging Face cache (looked for {snapshots}/REVISION, from "
                     "HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub); nothing is downloaded: fill the "
                     f"cache while online (huggingface-cli download {name}) or point HF_HUB_CACHE at one that holds "
                     "it")  # fmt: skip
