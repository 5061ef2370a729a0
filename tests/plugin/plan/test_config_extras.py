"""Configuration's byte values (base64 text, as Flink keeps bytes), list values (``a;b`` or
``[a, b]``, quotes holding separators) and add_all_to_dict."""

from __future__ import annotations

import pytest
from pyspark_datastream import Configuration, ConfigurationError


def test_bytes_round_trip_as_base64_text():
    config = Configuration()
    config.set_bytearray("k", b"\x00\xffab")
    assert config.get_string("k") == "AP9hYg=="  # base64 of 00 ff 61 62
    assert config.get_bytearray("k", b"") == b"\x00\xffab"
    assert config.get_bytearray("missing", b"dflt") == b"dflt"
    config.set_string("text", "not base64!")
    with pytest.raises(ConfigurationError, match="text"):
        config.get_bytearray("text", b"")
    with pytest.raises(ConfigurationError, match="set_bytearray"):
        config.set_bytearray("k", "str")


@pytest.mark.parametrize("text,parts", [
    ("a;b;c", ["a", "b", "c"]),
    ("[x, y]", ["x", "y"]),
    ("'a;b';c", ["a;b", "c"]),
    ('["1,2", 3]', ["1,2", "3"]),
    ("", []),
    ("[]", []),
    ("single", ["single"]),
])
def test_list_values_split_as_flink_writes_them(text, parts):
    assert Configuration.parse_list_value(text) == parts


def test_an_unclosed_quote_is_an_error():
    with pytest.raises(ConfigurationError, match="unclosed quote"):
        Configuration.parse_list_value("'a;b")


def test_add_all_to_dict_copies_every_entry():
    target = {"other": "1"}
    Configuration({"a": 1, "b": "x"}).add_all_to_dict(target)
    assert target == {"other": "1", "a": "1", "b": "x"}
