"""The one text of a number (nuboard/web/number_text.py): the rule's examples, and, over seeded
hypothesis examples, that every text reads back as the value it was written from (ints
exactly, floats to the digits the rule keeps)."""
from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nuboard.catalog.sync import config_value, flatten_config
from nuboard.web.number_text import cell_text, number_text

EXAMPLES = [
    (None, ""), (True, "true"), (False, "false"),
    (0, "0"), (-7, "-7"), (2 ** 53 + 1, "9007199254740993"), (10 ** 30, str(10 ** 30)),
    (math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "-inf"), (0.0, "0"), (-0.0, "0"),
    (76193.4, "76193"), (0.001, "0.001"), (3.14159, "3.1416"), (123456.7, "123457"),
    (0.00031234, "0.00031234"), (1e-4, "0.0001"), (999999.7, "1000000"), (2.0, "2"),
    (-2.5, "-2.5"), (1234.25, "1234.3"),                 # a tie rounds away from zero, as JS
    (3.125e-5, "3.125e-5"), (1.2e7, "1.2e+7"), (5e-5, "5e-5"), (1e6, "1e+6"),
    (10005000.0, "1.001e+7"), (-2.5e-7, "-2.5e-7"), (5e-324, "5e-324"),
]


@pytest.mark.parametrize(("value", "text"), EXAMPLES)
def test_the_rules_examples(value, text):
    assert number_text(value) == text


def test_a_cell_writes_lists_as_json_and_text_as_it_is():
    assert cell_text([1, 0.5]) == "[1, 0.5]" and cell_text({"a": "é"}) == '{"a": "é"}'
    assert cell_text("adam") == "adam" and cell_text(7.6193e4) == "76193"


@given(st.integers(min_value=-(10 ** 40), max_value=10 ** 40))
def test_an_int_keeps_every_digit(value):
    assert int(number_text(value)) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_reads_back_to_the_digits_the_rule_keeps(value):
    text = number_text(value)
    back = Decimal(text)                 # read exactly: 1.798e+308 is past the largest double
    plain = 1e-4 <= abs(value) < 1e6
    assert ("e" not in text) == (plain or value == 0)
    assert abs(back - Decimal(value)) <= abs(Decimal(value)) * Decimal(5e-5 if plain else 5e-4)
    if "e" in text:
        mantissa = text.partition("e")[0].lstrip("-")
        assert len(mantissa.replace(".", "")) <= 4 and not mantissa.endswith(("0", "."))


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=5))
def test_a_config_cell_decodes_to_the_value_logged(value):
    (cell,) = flatten_config({"k": value})
    back = config_value(cell["type"], cell["value_num"], cell["value_text"])
    assert cell_text(back) == cell_text(value)
    if isinstance(value, int):
        assert back == value and type(back) is type(value)
