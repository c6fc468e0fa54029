"""JUnit XML for `orderlab check --junit`: one test case per spec, so any CI system shows results natively.

Drift (or a missing baseline) is a <failure>, a spec or baseline problem an <error>; the drift tables
go into the body as plain text. Characters XML cannot carry are dropped, so the report always parses.
Written whole or not at all (orderlab/results/artifact.py); a destination that cannot take it, or that
the writer rule forbids (a device, FIFO, folder or link; a spec or baseline file the check reads), is
refused before any spec runs.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orderlab.results import artifact

SUITE = "orderlab check"
OPTION = "--junit"
# XML 1.0 allows tab, newline, CR and these ranges; other C0 controls, lone surrogates, U+FFFE/U+FFFF never.
XML_ILLEGAL = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class Case:
    name: str  # the spec's name
    file: str  # the spec's path
    seconds: float
    failure: str | None = None  # one-line message when the spec drifted or has no baseline
    error: str | None = None  # one-line message when it could not be checked
    details: str = ""  # plain-text body: the drift tables


def xml_safe(text: str) -> str:
    return XML_ILLEGAL.sub("", text)


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
            suite, "testcase", {"classname": "orderlab.check", "name": xml_safe(case.name),
                                "file": xml_safe(case.file), "time": f"{case.seconds:.3f}"},
        )  # fmt: skip
        for tag, message in (("failure", case.failure), ("error", case.error)):
            if message is not None:
                failure = ET.SubElement(element, tag, {"message": xml_safe(message), "type": tag})
                failure.text = xml_safe(case.details or message)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)  # bytes for any encoding but "unicode"
    return document + b"\n"


def check_destination(path: Path, inputs: Sequence[Path] = ()) -> None:
    """Refuse a --junit path that cannot take the report or is one of `inputs`, before any spec runs."""
    artifact.check_destination(path, OPTION, "check.xml", inputs)


def write_junit(path: Path, cases: list[Case], inputs: Sequence[Path] = ()) -> None:
    """Write the report whole or not at all; OrderlabError (one line) if it cannot be written."""
    artifact.write_file(path, junit_xml(cases), OPTION, inputs)
