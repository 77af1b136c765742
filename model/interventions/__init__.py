"""Changing the model while it runs, for one call: heads switched off, positions removed, shuffled or shifted.

    Interventions (value.py)     the value every call takes whole: at most one change per slot
    base.py                      the protocol of a kind: hook points, URL / download / label forms
    positions_off.py, positions_shuffled.py, positions_shifted.py, heads_off.py    one module per kind
    registry.py                  KIND_CLASSES: every kind by name (a new kind: one module + one line there)
    effects.py                   max_shift: the largest shift an input allows

An `Interventions` travels into `record(model, interventions=...)`; the recording hooks ask it what to do at each
hook point, only for the passes of that record block, so other sessions sharing the model are not affected and
nothing on the model changes.
"""

from ..lazy import exports

__getattr__, __dir__ = exports(
    __name__,
    {
        "ATTENTION_KINDS": ".base",
        "MAX_SHIFT": ".base",
        "Change": ".base",
        "HeadsOff": ".heads_off",
        "zero_heads": ".heads_off",
        "PositionsOff": ".positions_off",
        "PositionsShifted": ".positions_shifted",
        "PositionsShuffled": ".positions_shuffled",
        "KIND_CLASSES": ".registry",
        "NONE": ".value",
        "POSITIONAL": ".value",
        "Interventions": ".value",
        "KINDS": ".base:ATTENTION_KINDS",  # the attention modules a head belongs to (the name pages and analyses import)
        "INTERVENTION_KINDS": ".registry:KIND_CLASSES",  # every intervention kind by name
    },
    globals(),
)  # loaded on first use: model/lazy.py

__all__ = [
    "ATTENTION_KINDS",
    "Change",
    "HeadsOff",
    "INTERVENTION_KINDS",
    "Interventions",
    "KINDS",
    "KIND_CLASSES",
    "MAX_SHIFT",
    "NONE",
    "POSITIONAL",
    "PositionsOff",
    "PositionsShifted",
    "PositionsShuffled",
    "zero_heads",
]
