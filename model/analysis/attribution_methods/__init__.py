"""The attribution methods, one module each: a method is one module here and one line in registry.py.

A method module holds both halves of the method:
- NAME (its key in links and downloads), TITLE and EXPLANATION (marked with N_, translated where shown; the
  EXPLANATION names what the model reads and writes by the placeholders of the app's per-shape words, {read},
  {written}, {reads}, {held}, {rollout}: ui/shell/shapes.py ShapeWords);
- SETTINGS: a `Choice` per setting a reader can change (the page's control, its link key and allowed values);
- CHEAP: whether the page computes it on every visit (False: only when the reader picks it, flow and integrated
  gradients take seconds);
- compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress) -> (scores (T, S),
  settings used, extra fields of the Attribution) through the passes of passes.py;
- plan(cfg, S, T, settings, budget) -> model.analysis.budget.Plan: its cost in the budget's units (bytes and
  operations, the worst case of any adaptive loop), counted before it starts; BudgetExceeded saying what fits.
  ADAPTIVE (optional, True): its loop takes what the other methods of the request leave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Choice:
    """A setting of a method that takes one of a few values."""

    name: str  # the keyword of model.attribute()
    link: str  # its key in the attribution page's link
    default: object
    options: dict  # value -> its name on the page (marked with N_)
    title: str  # the control's label (marked with N_)
    offered: Callable[[object, Any], bool] | None = None  # (value, tokenizer) -> whether this model has it; None: all

    def options_for(self, tokenizer) -> list:
        """The values a model with this tokenizer can use (a mask token only where its vocabulary has one)."""
        return [v for v in self.options if self.offered is None or self.offered(v, tokenizer)]
