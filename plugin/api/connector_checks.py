"""The checks the connector builders share: option values and the error for an option this
project does not support."""

from __future__ import annotations

from ..state_store.exceptions import GraphBuildError
from .exceptions import UnsupportedConnectorError

__all__ = ["unsupported_option", "nonempty_text", "require_utf8"]


def unsupported_option(what: str, option: str, supported: str) -> UnsupportedConnectorError:
    """The error for a connector option this project does not support.

    Args:
        what: The connector or builder (e.g. ``"KafkaSink"``).
        option: The option and its value, as the user wrote it.
        supported: What to use instead.

    Returns:
        The error to raise.
    """
    return UnsupportedConnectorError(f"{what}: {option} is not supported; {supported}")


def nonempty_text(what: str, name: str, value: object) -> str:
    """``value`` when it is a non-empty str.

    Args:
        what: The connector or builder, for the message.
        name: The setting, for the message.
        value: What the program passed.

    Returns:
        ``value``.

    Raises:
        GraphBuildError: For anything else.
    """
    if not isinstance(value, str) or not value:
        raise GraphBuildError(f"{what}: {name} must be a non-empty string, got {value!r}")
    return value


def require_utf8(what: str, charset: object, why: str) -> None:
    """Refuse a character set other than UTF-8 (any spelling of it).

    Args:
        what: The format or schema, for the message.
        charset: The character set the program passed.
        why: Why only UTF-8 works there.

    Raises:
        UnsupportedConnectorError: For another character set.
    """
    if str(charset).upper().replace("_", "-") not in ("UTF-8", "UTF8"):
        raise unsupported_option(what, f"charset {charset!r}", why)
