"""PyFlink's ``ConfigOptions``/``ConfigOption`` (``pyflink.common.config_options``) and the
``InputDependencyConstraint`` enum: typed configuration keys with defaults, read from and
written to a :class:`Configuration` with ``ConfigOption.get_from`` / ``set_to``."""

from __future__ import annotations

import enum
from typing import Any, Callable, Generic, Optional, TypeVar

from ..plan.config import Configuration
from ..state_store.exceptions import ConfigurationError

__all__ = ["ConfigOption", "ConfigOptions", "InputDependencyConstraint"]

T = TypeVar("T")


class InputDependencyConstraint(enum.Enum):
    """Flink's (deprecated) scheduling constraint of an operator's inputs; steers Flink's
    scheduler only."""

    ANY = 0
    ALL = 1


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise ValueError(text)
    return low == "true"


def _option_text(value: Any, parse: Callable[[str], Any], problem: str) -> str:
    """``value`` as the text a Configuration holds, checked by ``parse`` (``ConfigurationError``
    saying ``problem`` when it does not parse)."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    try:
        parse(text)
    except ValueError as exc:
        raise ConfigurationError(problem) from exc
    return text


class ConfigOption(Generic[T]):
    """A typed configuration key with an optional default (PyFlink's ``ConfigOption``);
    built by :class:`ConfigOptions`.

    Args:
        key: The key.
        parse: Turns the stored text into the option's type.
        type_name: The type's name, for messages.
        default: The default value, or None.
    """

    def __init__(self, key: str, parse: Callable[[str], T], type_name: str,
                 default: Optional[T] = None) -> None:
        self._key = key
        self._parse = parse
        self._type_name = type_name
        self._default = default

    def key(self) -> str:
        """The option's key.

        Returns:
            The key.
        """
        return self._key

    def default_value(self) -> Optional[T]:
        """The option's default.

        Returns:
            The default, or None.
        """
        return self._default

    def has_default_value(self) -> bool:
        """Whether the option has a default.

        Returns:
            The flag.
        """
        return self._default is not None

    def get_from(self, configuration: Configuration) -> Optional[T]:
        """The option's value in ``configuration``, or its default.

        Args:
            configuration: A Configuration (or ``env.get_config()``).

        Returns:
            The typed value.

        Raises:
            ConfigurationError: the stored text is not of the option's type.
        """
        raw = configuration.get_string(self._key)
        if raw is None:
            return self._default
        try:
            return self._parse(raw)
        except ValueError as exc:
            raise ConfigurationError(
                f"{self._key} must be {self._type_name}, got {raw!r}") from exc

    def set_to(self, configuration: Configuration, value: T) -> Configuration:
        """Set the option in ``configuration``.

        Args:
            configuration: A Configuration.
            value: A value of the option's type.

        Returns:
            The configuration.

        Raises:
            ConfigurationError: ``value`` is not of the option's type.
        """
        text = _option_text(value, self._parse, f"{self._key} must be {self._type_name}, got {value!r}")
        return configuration.set_string(self._key, text)

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r}, {self._type_name}, default={self._default!r})"


class ConfigOptions:
    """Builds :class:`ConfigOption` s: ``ConfigOptions.key("a.b").int_type().default_value(3)``."""

    @staticmethod
    def key(key: str) -> ConfigOptions.OptionBuilder:
        """Start an option of ``key``.

        Args:
            key: A non-empty key.

        Returns:
            The builder.

        Raises:
            ConfigurationError: an empty key.
        """
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"ConfigOptions.key needs a non-empty key, got {key!r}")
        return ConfigOptions.OptionBuilder(key)

    class OptionBuilder:
        """Chooses the option's type.

        Args:
            key: The option's key.
        """

        def __init__(self, key: str) -> None:
            self._key = key

        def _typed(self, parse: Callable[[str], Any], name: str
                   ) -> ConfigOptions.TypedConfigOptionBuilder:
            return ConfigOptions.TypedConfigOptionBuilder(self._key, parse, name)

        def boolean_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """A bool option.

            Returns:
                The typed builder.
            """
            return self._typed(_bool, "true or false")

        def int_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """An int option.

            Returns:
                The typed builder.
            """
            return self._typed(int, "an int")

        def long_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """An int option (Java's long).

            Returns:
                The typed builder.
            """
            return self._typed(int, "an int")

        def float_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """A float option.

            Returns:
                The typed builder.
            """
            return self._typed(float, "a number")

        def double_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """A float option (Java's double).

            Returns:
                The typed builder.
            """
            return self._typed(float, "a number")

        def string_type(self) -> ConfigOptions.TypedConfigOptionBuilder:
            """A str option.

            Returns:
                The typed builder.
            """
            return self._typed(str, "a str")

    class TypedConfigOptionBuilder:
        """Sets the option's default.

        Args:
            key: The option's key.
            parse: Turns stored text into the option's type.
            type_name: The type's name.
        """

        def __init__(self, key: str, parse: Callable[[str], Any], type_name: str) -> None:
            self._key, self._parse, self._name = key, parse, type_name

        def default_value(self, value: Any) -> ConfigOption[Any]:
            """The option with default ``value``.

            Args:
                value: The default, of the option's type.

            Returns:
                The ConfigOption.

            Raises:
                ConfigurationError: ``value`` is not of the option's type.
            """
            _option_text(value, self._parse, f"{self._key}: default {value!r} is not {self._name}")
            return ConfigOption(self._key, self._parse, self._name, value)

        def no_default_value(self) -> ConfigOption[Any]:
            """The option without a default.

            Returns:
                The ConfigOption.
            """
            return ConfigOption(self._key, self._parse, self._name)
