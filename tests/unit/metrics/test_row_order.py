"""The metrics' row order is declared (metrics/__init__.py), not inherited from import order or the order in which
stacked decorators register: every built-in metric is declared once, and the rows follow the declaration."""

from __future__ import annotations

import pytest

from orderlab.errors import OrderlabError
from orderlab.metrics import BOTH, EQUIVARIANCE_FAMILY, METRICS, metric, metric_names
from orderlab.metrics.registry import ROW_ORDER, declare_row_order


def test_every_metric_is_declared_once_and_the_rows_follow_the_declaration():
    assert metric_names() == ROW_ORDER
    assert len(set(ROW_ORDER)) == len(ROW_ORDER)


def test_the_declared_order_is_the_row_order_not_the_registration_order():
    assert METRICS.names().index("cosine_cls") < METRICS.names().index("invariance_mean")  # registered first
    assert ROW_ORDER.index("invariance_mean") < ROW_ORDER.index("cosine_cls")  # the stack's default rows come first


@pytest.fixture
def undeclared():
    """A metric registered after the built-ins and not declared, as a package of one's own would add it."""
    yield metric("late_shift", EQUIVARIANCE_FAMILY, BOTH, "permutation × layer", "a late metric", computed_by="a test")
    METRICS.unregister("late_shift")


def test_a_metric_not_declared_follows_the_declared_ones_of_its_group(undeclared):
    names = metric_names()
    assert names.index("late_shift") == names.index("pair_l2") + 1  # the last of the default families' stack rows
    assert [name for name in names if name != "late_shift"] == ROW_ORDER


def test_a_declaration_naming_a_metric_twice_or_an_unknown_one_is_refused():
    declared = list(ROW_ORDER)
    with pytest.raises(ValueError, match="a name given twice"):
        declare_row_order(*declared, declared[0])
    with pytest.raises(OrderlabError, match="Unknown metric 'equivarianse'"):
        declare_row_order("equivarianse")
    assert declared == ROW_ORDER  # a refused declaration changes nothing
