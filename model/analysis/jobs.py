"""Compute functions that a worker process runs (ui/serving/workers.py passes them by reference): each is one call that
does all of one view's heavy work and returns plain records, with a `progress(done, total)` argument.

Nothing here knows about processes or limits: called directly, each is an ordinary function (tests do that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def attribute_methods(
    model,
    tokenizer,
    source: str,
    target: str | None,
    methods: Sequence[str],
    interventions=None,
    plans: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
    **settings,
) -> dict:
    """{method: Attribution} of each of `methods` on one input (model.analysis.attribution.attribute), one after
    the other; progress counts every method's own steps as one share of the whole (1000 per method)."""
    from .attribution import attribute

    out = {}
    for i, method in enumerate(methods):

        def report(done: int, total: int, i: int = i) -> None:
            if progress is not None:
                progress(int(1000 * (i + done / max(total, 1))), 1000 * len(methods))

        out[method] = attribute(
            model, tokenizer, source, target, method=method, interventions=interventions, progress=report,
            plan=(plans or {}).get(method), **settings,
        )  # fmt: skip
        report(1, 1)
    return out
