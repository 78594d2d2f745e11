import pytest

from linklab import units
from linklab.errors import UsageError


@pytest.mark.parametrize(
    ("text", "expected"),
    [("256KiB", 262144), ("64KB", 64000), ("1500B", 1500), ("2MiB", 2 * 1024**2),
     ("0.5KiB", 512), ("1GB", 10**9)],
)
def test_sizes_distinguish_decimal_and_binary_prefixes(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("433Mbit/s", 433e6), ("433Mbps", 433e6), ("1Gbit/s", 1e9), ("100kbps", 1e5)],
)
def test_bitrates(text, expected):
    assert units.parse_bitrate(text) == pytest.approx(expected)


def test_frequency_duration_fraction():
    assert units.parse_frequency("30Hz") == 30.0
    assert units.parse_frequency("0.33Hz") == pytest.approx(0.33)
    assert units.parse_duration("20s") == 20.0
    assert units.parse_duration("100ms") == pytest.approx(0.1)
    assert units.parse_fraction("1%") == pytest.approx(0.01)
    assert units.parse_fraction("0.01") == pytest.approx(0.01)
    assert units.parse_fraction("20%") == pytest.approx(0.2)


def test_bare_number_where_unit_needed_shows_accepted_forms():
    with pytest.raises(UsageError) as info:
        units.parse_size("256", argument="--payload")
    message = str(info.value)
    assert message.startswith("--payload:")
    assert "KiB" in message and "no unit" in message


@pytest.mark.parametrize("bad", ["256XB", "fast", "", "-5KiB", "0B", "1e999KiB"])
def test_bad_sizes_are_rejected(bad):
    with pytest.raises(UsageError):
        units.parse_size(bad, argument="--payload")


@pytest.mark.parametrize("bad", ["150%", "1.5", "-1%", "5Hz"])
def test_bad_fractions_are_rejected(bad):
    with pytest.raises(UsageError):
        units.parse_fraction(bad, argument="--loss")


def test_fractional_bytes_rejected():
    with pytest.raises(UsageError):
        units.parse_size("0.1B")


def test_formatting_round_numbers():
    assert units.format_size(262144) == "256 KiB"
    assert units.format_bitrate(433e6) == "433 Mbit/s"
    assert units.format_duration(0.5) == "500 ms"


@pytest.mark.parametrize(("parse", "bad"), [
    (units.parse_size, "1e300GiB"), (units.parse_size, "1e20GiB"),
    (units.parse_duration, "1e308h"), (units.parse_duration, "2e9s"),
    (units.parse_bitrate, "inf"), (units.parse_bitrate, "1e308Gbit/s"),
    (units.parse_frequency, "nan"), (units.parse_size, float("nan")),
    (units.parse_fraction, 10**400), (units.parse_duration, float("inf")),
])
def test_values_that_overflow_or_are_not_finite_are_one_line_errors(parse, bad):
    with pytest.raises(UsageError) as caught:
        parse(bad, argument="--x")
    assert str(caught.value).startswith("--x: ") and "\n" not in str(caught.value)
