"""What a checkpoint file says about itself, read without torch: `validate` fills a `kind: checkpoint` model from it.

A checkpoint is a safetensors file (train/checkpoint.py writes and loads its tensors); its header is 8 bytes
of little-endian length and a JSON object whose `__metadata__` holds, under METADATA_KEY, the stack's shape, the
encoding, the seed and the task it was trained on. Must not import torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orderlab.errors import OrderlabError

METADATA_KEY = "orderlab"
MAX_HEADER_BYTES = 16 * 2**20  # a header lists every tensor's name and shape: kilobytes for these stacks


def read_metadata(path: Path) -> dict[str, Any]:
    """The checkpoint's orderlab metadata; OrderlabError (one line) when the file is not an orderlab checkpoint."""
    try:
        with path.open("rb") as file:
            length = int.from_bytes(file.read(8), "little")
            if not 0 < length <= MAX_HEADER_BYTES:
                raise OrderlabError(f"{path}: not a safetensors file; expected a checkpoint orderlab wrote")
            header = json.loads(file.read(length))
    except OSError as error:
        raise OrderlabError(f"{path}: cannot read it ({error.strerror}); expected a checkpoint file") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise OrderlabError(f"{path}: not a safetensors file; expected a checkpoint orderlab wrote") from None
    text = header.get("__metadata__", {}).get(METADATA_KEY) if isinstance(header, dict) else None
    if not isinstance(text, str):
        raise OrderlabError(f"{path}: a safetensors file without orderlab's metadata; expected one orderlab wrote")
    metadata: dict[str, Any] = json.loads(text)
    return metadata
