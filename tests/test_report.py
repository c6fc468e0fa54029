"""Terminal rendering: tables rendered into an 80-column text console and read as text."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from orderlab.report.terminal import summary_tables

ENCODINGS = ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"]


def render(tables, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    for table in tables:
        console.print(table)
    return console.file.getvalue()


def fake_summary() -> pd.DataFrame:
    row = {"case": "permutation", "subject": "the dog bites the man", "metric": "equivariance"}
    for index, name in enumerate(ENCODINGS):
        row[name] = 0.0 if index == 0 else 0.1 * index
        row[f"{name} verdict"] = "equivariant" if index == 0 else "order-sensitive"
    return pd.DataFrame([row])


def test_many_encodings_split_into_tables_that_fit_without_truncation():
    text = render(summary_tables(fake_summary(), ENCODINGS, "tour", "float64", width=80))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for name in ENCODINGS:
        assert name in text
    assert "≈0 ✓" in text and "7.0e-01 ✗" in text
    assert text.count("the dog bites the man") == 2  # one heading per table


def test_a_wide_console_gets_one_table():
    tables = summary_tables(fake_summary(), ENCODINGS, "tour", "float64", width=200)
    assert len(tables) == 1
