"""plan/limits.py after spec/load.py: loading checks the contract and prices nothing; the limits refuse after."""

from __future__ import annotations

import pytest

from orderlab.errors import SpecError
from orderlab.plan import limits
from orderlab.plan.memory import Room
from orderlab.spec.load import load_spec, with_changes

HUGE = "name: huge\nmodel: {d_model: 16384, n_heads: 4}\ninputs: [{sentence: a b c}]\n"


@pytest.fixture(autouse=True)
def small_machine(monkeypatch):
    monkeypatch.setattr(limits, "memory_room", lambda: Room(8 * 10**9, "this machine has"))


def test_loading_a_spec_does_not_price_it(write_spec):
    assert load_spec(write_spec(HUGE)).spec.stack.d_model == 16384


def test_the_limits_refuse_it_naming_the_file_line_and_field(write_spec):
    path = write_spec(HUGE)
    with pytest.raises(SpecError) as refused:
        limits.validate_limits(load_spec(path))
    assert str(refused.value).startswith(f"{path}:2: model.d_model: 16,384 needs ~")
    assert "of memory" in str(refused.value) and "expected a smaller d_model" in str(refused.value)


def test_a_spec_changed_after_loading_is_priced_as_changed(write_spec):
    loaded = limits.validate_limits(load_spec(write_spec("name: s\ninputs: [{sentence: a b c}]\n")))
    wide = with_changes(loaded, {"model": loaded.spec.model.model_copy(update={"d_model": 16384})})
    with pytest.raises(SpecError, match=r"model.d_model: 16,384 needs ~.* of memory"):
        limits.validate_limits(wide)
