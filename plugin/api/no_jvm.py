"""PyFlink's accessors of the Java objects behind its Python wrappers (``get_java_function``,
``get_java_object``, ...): there is no JVM-side Flink object here, so each raises a typed
error naming the call instead of an ``AttributeError``."""

from __future__ import annotations

from typing import Any, Callable, NoReturn

from ..state_store.exceptions import GraphBuildError

__all__ = ["no_java_object"]


def no_java_object(api: str, error: type[GraphBuildError] = GraphBuildError
                   ) -> Callable[[Any], NoReturn]:
    """A method that raises ``error`` naming ``api``.

    Args:
        api: The PyFlink call, e.g. ``"FileSink.get_java_function"``.
        error: The error class (a GraphBuildError; connectors use UnsupportedConnectorError).

    Returns:
        The method, to assign in a class body.
    """

    def method(self: Any) -> NoReturn:
        raise error(
            f"{api}(): there is no Java Flink object behind {type(self).__name__} here (it "
            f"runs on Spark, with no Flink JVM); use its Python methods")

    method.__name__ = api.rsplit(".", 1)[-1]
    method.__doc__ = (f"Refused: no Java Flink object is behind this object.\n\n"
                      f"Raises:\n    {error.__name__}: always, naming ``{api}``.\n")
    return method
