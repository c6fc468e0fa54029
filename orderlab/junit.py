"""JUnit XML for `orderlab check --junit`: one test case per spec, so any CI system shows results natively.

Drift is a <failure>, a spec or baseline problem an <error>; the drift table goes into the body as
plain text. Written to a temporary file beside the destination and renamed, like results folders.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SUITE = "orderlab check"


@dataclass(frozen=True)
class Case:
    name: str  # the spec's name
    file: str  # the spec's path
    seconds: float
    failure: str | None = None  # one-line message when the spec drifted
    error: str | None = None  # one-line message when it could not be checked
    details: str = ""  # plain-text body: the drift table


def junit_xml(cases: list[Case]) -> bytes:
    total = f"{sum(c.seconds for c in cases):.3f}"
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(c.failure is not None for c in cases)),
        "errors": str(sum(c.error is not None for c in cases)),
        "skipped": "0",
        "time": total,
    }
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **counts})
    for case in cases:
        element = ET.SubElement(
            suite, "testcase", {"classname": "orderlab.check", "name": case.name, "file": case.file,
                                "time": f"{case.seconds:.3f}"},
        )  # fmt: skip
        for tag, message in (("failure", case.failure), ("error", case.error)):
            if message is not None:
                ET.SubElement(element, tag, {"message": message, "type": tag}).text = case.details or message
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: Path, cases: list[Case]) -> None:
    """Write the report whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(junit_xml(cases))
        os.chmod(staging, 0o644)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
