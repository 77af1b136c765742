"""Attention flow: maximum flow over the same attention graph as rollout (networkx); rows sum to 1."""

from __future__ import annotations

from i18n import N_

from .passes import graph_scores

NAME = "flow"
TITLE = N_("Attention flow")
EXPLANATION = N_(
    "**Attention flow** (Abnar & Zuidema 2020): the same layered graph with the weights as capacities; the score "
    "of a source token is the maximum flow from the output position to it (networkx). Rows sum to 1."
)
SETTINGS = ()
CHEAP = False  # one max-flow per output token over every layer's graph: seconds on a long input


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    return graph_scores(model, tokenizer, source, target, NAME, changes, len(prep.scored), progress, prep), {}, {}
