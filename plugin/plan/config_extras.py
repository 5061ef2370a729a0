"""PyFlink ``Configuration`` calls beyond the typed accessors: byte values, list values and
copying into a dict (mixed into :class:`~pyspark_datastream.plan.config.Configuration`)."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from ..state_store.exceptions import ConfigurationError

__all__ = ["ConfigurationExtras"]

_Self = TypeVar("_Self", bound="ConfigurationExtras")


def _split(text: str, separator: str) -> list[str]:
    """Split at ``separator`` outside single or double quotes; strip and unquote each part."""
    parts: list[str] = []
    current: list[str] = []
    quote: Optional[str] = None
    for ch in text:
        if quote is not None:
            if ch == quote:
                quote = None
            else:
                current.append(ch)
        elif ch in "'\"":
            quote = ch
        elif ch == separator:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if quote is not None:
        raise ConfigurationError(f"parse_list_value: unclosed quote in {text!r}")
    parts.append("".join(current).strip())
    return parts


class ConfigurationExtras:
    """``set_bytearray``/``get_bytearray``, ``parse_list_value`` and ``add_all_to_dict``."""

    _data: dict[str, str]

    if TYPE_CHECKING:  # provided by Configuration
        def set_string(self, key: str, value: str) -> Any: ...

    def set_bytearray(self: _Self, key: str, value: bytes) -> _Self:
        """Set ``key`` to bytes (kept as base64 text, as Flink writes bytes into its
        configuration).

        Args:
            key: The configuration key.
            value: bytes or a bytearray.

        Returns:
            This configuration.

        Raises:
            ConfigurationError: ``value`` is not bytes.
        """
        if not isinstance(value, (bytes, bytearray)):
            raise ConfigurationError(f"set_bytearray({key!r}) needs bytes, got {value!r:.80}")
        self.set_string(key, base64.b64encode(bytes(value)).decode("ascii"))
        return self

    def get_bytearray(self, key: str, default_value: bytes) -> bytes:
        """The bytes set under ``key`` with :meth:`set_bytearray`.

        Args:
            key: The configuration key.
            default_value: What to return when the key is unset.

        Returns:
            The bytes, or ``default_value``.

        Raises:
            ConfigurationError: the stored value is not base64.
        """
        raw = self._data.get(key)
        if raw is None:
            return default_value
        try:
            return base64.b64decode(raw.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError) as exc:
            raise ConfigurationError(f"{key} does not hold bytes (base64), got {raw!r:.80}") \
                from exc

    @staticmethod
    def parse_list_value(value: str) -> list[str]:
        """Split a list-valued option as Flink writes it: ``a;b;c`` or ``[a, b, c]``; a part in
        single or double quotes may hold the separator.

        Args:
            value: The option's text.

        Returns:
            The parts (an empty list for an empty value or ``[]``).

        Raises:
            ConfigurationError: not a str, or an unclosed quote.
        """
        if not isinstance(value, str):
            raise ConfigurationError(f"parse_list_value needs a str, got {value!r:.80}")
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            inner = text[1:-1].strip()
            return _split(inner, ",") if inner else []
        return _split(text, ";") if text else []

    def add_all_to_dict(self, target_dict: dict[str, Any]) -> None:
        """Copy every key and its string value into ``target_dict``.

        Args:
            target_dict: The dict to update.

        Raises:
            ConfigurationError: ``target_dict`` is not a dict.
        """
        if not isinstance(target_dict, dict):
            raise ConfigurationError(f"add_all_to_dict needs a dict, got {target_dict!r:.80}")
        target_dict.update(self._data)
