"""Serialized key bytes computed by Spark column expressions (driver side).

Byte for byte what the Python key serializers produce, so BATCH sorts and savepoints can
key records natively without a Python pass.
"""

from __future__ import annotations

from typing import Any

__all__ = ["native_key_bytes"]

# Checked against the serializers in integration_tests/test_batch.py. Strings: UTF-8 with every 0x00
# byte escaped as 0x00 0xFF and a 0x00 0x00 terminator; the escape runs on the hex form so
# only byte-aligned "00" pairs are replaced (\G anchors each match where the last ended).
_ESCAPE_NUL = r"\G((?:[0-9A-F]{2})*?)00"


def native_key_bytes(column: Any, type_name: str, serializer: Any) -> Any:
    """Spark Column with ``serializer.serialize(value)`` of the field, or None if unsupported."""
    from pyspark.sql import functions as F

    name = type(serializer).__name__
    if name == "GenericKeySerializer":
        if type_name == "STRING":
            return F.concat(F.unhex(F.lit("09")), _escaped_string(column))
        if type_name in ("LONG", "INT", "SHORT", "BYTE"):
            return F.concat(F.unhex(F.lit("05")), _flipped_long(column))
        return None
    if name == "LexicographicStringSerializer" and type_name == "STRING":
        return _escaped_string(column)
    if name == "LexicographicLongSerializer" and type_name in ("LONG", "INT", "SHORT", "BYTE"):
        return _flipped_long(column)
    return None


def _escaped_string(column: Any) -> Any:
    from pyspark.sql import functions as F

    terminator = F.unhex(F.lit("0000"))
    # A Spark string holds its UTF-8 bytes: a cast to binary copies them (encode() would
    # decode to a Java string and encode it back), and contains() tests bytes (instr()
    # also counts characters).
    utf8 = column.cast("binary")
    escaped = F.unhex(F.regexp_replace(F.hex(utf8), _ESCAPE_NUL, "$100FF"))
    # Strings without NUL (nearly all) skip the hex round trip.
    return F.concat(F.when(column.contains("\u0000"), escaped).otherwise(utf8), terminator)


def _flipped_long(column: Any) -> Any:
    from pyspark.sql import functions as F

    flipped = column.cast("bigint").bitwiseXOR(F.lit(-(2**63)).cast("bigint"))
    return F.unhex(F.lpad(F.hex(flipped), 16, "0"))
