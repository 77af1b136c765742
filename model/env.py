"""Operator settings read from the environment: each a positive whole number, its default where it is unset or not
one (a typo never switches a limit off)."""

from __future__ import annotations

import os


def positive_int(name: str, default: int) -> int:
    """int($name) when it is a positive whole number, else `default`."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default
