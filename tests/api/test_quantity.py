"""Quantities are parsed exactly (Fractions, never floats) and converted the way resource.Quantity does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from phalanx.api.quantity import QuantityError, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "exact", "milli", "whole"),
    [
        pytest.param("1.5Gi", Fraction(3 * 2**29), 1_610_612_736_000, 1_610_612_736, id="binary suffix with fraction"),
        pytest.param("500m", Fraction(1, 2), 500, 1, id="milli rounds up to 1 whole"),
        pytest.param("2e3", Fraction(2000), 2_000_000, 2000, id="decimal exponent"),
        pytest.param("1E3", Fraction(1000), 1_000_000, 1000, id="capital exponent is not exa"),
        pytest.param("1E", Fraction(10**18), 10**21, 10**18, id="exa"),
        pytest.param("0.1", Fraction(1, 10), 100, 1, id="0.1 is exactly 100 milli"),
        pytest.param("1n", Fraction(1, 10**9), 1, 1, id="one nano rounds up to 1 milli"),
        pytest.param("1e-3", Fraction(1, 1000), 1, 1, id="negative exponent"),
        pytest.param("128974848", Fraction(128974848), 128974848000, 128974848, id="plain integer"),
        pytest.param("129e6", Fraction(129_000_000), 129_000_000_000, 129_000_000, id="exponent form of memory"),
        pytest.param("123Mi", Fraction(123 * 2**20), 123 * 2**20 * 1000, 123 * 2**20, id="mebibytes"),
        pytest.param("1k", Fraction(1000), 1_000_000, 1000, id="lowercase kilo"),
        pytest.param(".5", Fraction(1, 2), 500, 1, id="leading dot"),
        pytest.param("+2", Fraction(2), 2000, 2, id="explicit plus sign"),
        pytest.param("-250m", Fraction(-1, 4), -250, 0, id="negative parses; validation rejects it"),
        pytest.param(4, Fraction(4), 4000, 4, id="YAML integer"),
        pytest.param(0.25, Fraction(1, 4), 250, 1, id="YAML float taken by its decimal repr"),
    ],
)
def test_parse_exactly(text: str | int | float, exact: Fraction, milli: int, whole: int) -> None:
    quantity = parse_quantity(text)
    assert quantity == exact
    assert isinstance(quantity, Fraction)
    assert milli_value(quantity) == milli
    assert value(quantity) == whole


def test_no_float_rounding() -> None:
    # 0.1 + 0.2 != 0.3 in floats; exact parsing keeps sums of requests exact.
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("0.3")
    assert milli_value(parse_quantity("0.3")) == 300


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("one", id="word"),
        pytest.param("1K", id="uppercase K is not a suffix"),
        pytest.param("1Gib", id="unknown suffix"),
        pytest.param("1e", id="exponent without digits"),
        pytest.param("e3", id="no number"),
        pytest.param("1.2.3", id="two dots"),
        pytest.param("--1", id="two signs"),
        pytest.param("1 Gi", id="space before suffix"),
        pytest.param(True, id="YAML boolean"),
        pytest.param(float("inf"), id="infinite float"),
    ],
)
def test_invalid(text: str | float) -> None:
    with pytest.raises(QuantityError, match="must match the regular expression"):
        parse_quantity(text)


def test_exponent_out_of_range() -> None:
    with pytest.raises(QuantityError, match="out of range"):
        parse_quantity("1e1001")
