"""A library's message in one line (orderlab/errors.py): what a refusal quotes and a compiler's fallback records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orderlab.errors import failure_line, first_line


def test_the_first_line_without_the_colon_that_announces_the_rest():
    assert first_line(OSError("  cannot open config.json:\n  permission denied\n")) == "cannot open config.json"


def test_an_empty_message_is_the_errors_type():
    assert first_line(ValueError()) == "ValueError"
    assert first_line(RuntimeError("   \n  ")) == first_line(RuntimeError(":")) == "RuntimeError"
    assert failure_line(RuntimeError()) == "RuntimeError"


def test_a_failure_line_names_the_type_then_the_message():
    assert failure_line(RuntimeError("no C compiler found\nmore")) == "RuntimeError: no C compiler found"


@given(st.text())
def test_always_one_line_never_empty(message):
    for line in (first_line(RuntimeError(message)), failure_line(RuntimeError(message))):
        assert len(line.splitlines()) == 1
