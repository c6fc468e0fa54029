"""`probes: {file: PATH}`: a BLiMP-format file of minimal pairs, read once when the spec is loaded and put in the
spec as the pairs it holds (`{pair: [good, bad], relation: minimal_pair, phenomenon, uid, field}`), so that the
loop, the plan and the views see one list of probes however it was written.

The file is read as core/minimal_pair_file.py reads it (bounded, each line checked); a problem is one line naming
the spec's field and the file's line. Torch-free, as the whole spec layer.
"""

from __future__ import annotations

from typing import Any

from orderlab.core.minimal_pair_file import MinimalPair, read_minimal_pairs
from orderlab.core.pair_relations import MINIMAL_PAIR
from orderlab.core.userfiles import FileProblem
from orderlab.spec.schema import relative_to_spec
from orderlab.spec.yamlsource import LocatedDocument

FILE_KEY = "file"


def with_probe_file(document: LocatedDocument) -> None:
    """The document with `probes: {file: PATH}` replaced by the file's pairs; any other probes are left as written
    (the schema judges them)."""
    data = document.data
    written = data.get("probes") if isinstance(data, dict) else None
    if not isinstance(written, dict) or FILE_KEY not in written:
        return
    if set(written) != {FILE_KEY} or not isinstance(written[FILE_KEY], str) or not written[FILE_KEY]:
        raise document.error(("probes",), "expected {file: PATH}, a BLiMP-format JSONL file of minimal pairs, or a "
                             "list of pairs")  # fmt: skip
    try:
        pairs = read_minimal_pairs(relative_to_spec(document.origin, written[FILE_KEY]))
    except FileProblem as error:
        raise document.error(("probes", FILE_KEY), str(error)) from None
    document.data = {**data, "probes": [_entry(pair) for pair in pairs]}


def _entry(pair: MinimalPair) -> dict[str, Any]:
    entry = {"pair": [pair.good, pair.bad], "relation": MINIMAL_PAIR, "phenomenon": pair.phenomenon}
    return entry | {key: value for key, value in (("uid", pair.uid), ("field", pair.field)) if value is not None}
