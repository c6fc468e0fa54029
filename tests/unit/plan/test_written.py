"""plan/written.py: what both cost models count of a run's output, against the permutations the loop draws."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orderlab.core import permutations as perms
from orderlab.metrics import ATTENTION_FAMILY
from orderlab.plan.written import attention_csv, kept_last
from orderlab.spec.schema import Spec

WORDS = st.lists(st.sampled_from("abcd"), min_size=2, max_size=6)


@given(WORDS, st.sampled_from(["all", "swaps", "prefixes", "reverse", "shifts", "identity"]))
def test_kept_last_counts_the_drawn_orders_that_keep_the_last_word(words, rule):
    drawn = perms.generate(rule, words)
    assert kept_last(rule, words, sure=True) == sum(1 for order in drawn if order[-1] == len(words) - 1)


@given(WORDS, st.data())
def test_kept_last_of_a_listed_rule_counts_its_orders_exactly(words, data):
    orders = data.draw(st.lists(st.permutations(range(len(words))).map(list), max_size=5))
    assert kept_last(orders, words, sure=True) == sum(1 for order in orders if order[-1] == len(words) - 1)


def test_attention_csv_is_every_map_of_the_shown_sentence_per_condition_layer_and_head():
    shown_orders = {"input": 0, "permutations": [[4, 3, 2, 1, 0], [1, 0, 2, 3, 4]]}
    spec = Spec.model_validate({"metrics": [ATTENTION_FAMILY], "inputs": [{"sentence": "the dog bit the man"}],
                                "attention_maps": shown_orders})  # fmt: skip
    shown = attention_csv(spec, conditions=3, layers=2, heads=4, extra_width=0)
    assert (shown.words, shown.maps) == (5, 3)  # as written, then its two shown reorderings
    assert shown.rows == 3 * 3 * 2 * 4 * 5 * 5
    assert shown.bytes.field == ("inputs", 0, "sentence")
    wider = attention_csv(spec, conditions=3, layers=2, heads=4, extra_width=10)
    assert wider.bytes.amount - shown.bytes.amount == 10 * shown.rows  # each row's label and swept columns


def test_no_attention_metric_writes_no_attention_csv():
    spec = Spec.model_validate({"metrics": ["invariance"], "inputs": [{"sentence": "the dog bit the man"}]})
    shown = attention_csv(spec, conditions=3, layers=2, heads=4, extra_width=10)
    assert (shown.rows, shown.bytes.amount) == (0, 0)
