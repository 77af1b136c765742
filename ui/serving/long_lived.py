"""The server's long-lived objects kept out of Python's full garbage collections (gc.freeze).

After every script run Streamlit calls gc.collect(2) (runner.postScriptGC), which walks every object the process
tracks: torch, plotly's validators, Streamlit, pandas, the loaded models, about 260,000 objects and 0.12 s of CPU
on this project's server, half of what a demo page run costs (benchmarks/bench_classroom.py, py-spy). Objects that
live as long as the process are moved out of the collector's reach once they exist: after a run that imported
modules or loaded a model, the run's own garbage is collected, then everything left is frozen. Frozen objects are
still freed when nothing refers to them; only a reference cycle among them would stay.
"""

from __future__ import annotations

import gc
import sys

_frozen_at = 0  # len(sys.modules) when the objects were last frozen
_loaded = False  # a model was loaded since then


def model_loaded() -> None:
    """A model (long-lived: cached for the process) was just loaded."""
    global _loaded
    _loaded = True


def freeze_long_lived() -> bool:
    """After a run: when modules were imported or a model loaded since the last time, collect the garbage, then
    freeze what is left. Returns whether it froze."""
    global _frozen_at, _loaded
    if len(sys.modules) == _frozen_at and not _loaded:
        return False
    gc.collect()
    gc.freeze()
    _frozen_at, _loaded = len(sys.modules), False
    return True


def released() -> None:
    """A model that was not long-lived after all (a visitor's, ui/serving/held_models.py) was let go: unfreeze, so that the
    collection that follows reaches whatever cycles it leaves; the next run freezes what lives on again."""
    global _loaded
    gc.unfreeze()
    _loaded = True
