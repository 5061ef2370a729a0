"""Runnable example programs (``python -m examples.<name>``); tests reuse their job builders."""

__all__: list[str] = []
