"""Operator settings read from the environment: limits, each a positive whole number, its default where it is unset
or not one (a typo never switches a limit off); switches, on unless set to 0."""

from __future__ import annotations

import os


def positive_int(name: str, default: int) -> int:
    """int($name) when it is a positive whole number, else `default`."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def switch(name: str, default: bool = True) -> bool:
    """$name as a switch: "0" turns it off, "1" on; unset or anything else leaves `default`."""
    value = os.environ.get(name, "").strip()
    return {"0": False, "1": True}.get(value, default)
