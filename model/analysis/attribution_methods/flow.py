"""Attention flow: maximum flow over the same attention graph as rollout (networkx); rows sum to 1."""

from __future__ import annotations

from i18n import M_, N_

from ..budget import capture_bytes, forward_ops, input_plan, one_sequence
from .passes import graph_scores

NAME = "flow"
TITLE = N_("Attention flow")
EXPLANATION = N_(
    "**Attention flow** (Abnar & Zuidema 2020): the same layered graph with the weights as capacities; the score "
    "of a {read} is the maximum flow from the position of the {written} to it (networkx). Rows sum to 1."
)
SETTINGS = ()
CHEAP = False  # one max-flow per output token over every layer's graph: seconds on a long input


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    return graph_scores(model, tokenizer, source, target, NAME, changes, len(prep.scored), progress, prep), {}, {}


EDGE_OPS = 4 * 10**4  # a max-flow's cost per edge of the graph, in the budget's operations (1 s ~ 10^10): measured
# 6.4 ms of CPU for one preflow-push over 2,111 edges (3 us an edge; the reverse demo, 20 letters, load 25; 10.6 s for
# 26 x 32 flows over 4,466 edges at 31 letters: 2.9 us), counted as 4 us
EDGE_BYTES = 2048  # networkx's memory per edge: the graph's and the residual network's two directions, dicts each


def edges(cfg, S: int, T: int) -> int:
    """Edges of the flow graph (model/analysis/attribution_graph.flow_graph): dense encoder self-attention, causal
    decoder self-attention, the residual and cross-attention of every decoder layer."""
    S, T = one_sequence(cfg, S, T)
    return cfg.n_encoder_layers * S * S + cfg.n_decoder_layers * (T * (T + 1) // 2 + T + T * S)


def need(cfg, S: int, T: int) -> tuple[int, int]:
    """(bytes, operations): one recorded pass, the graph, and one max-flow per (output token, source token) pair,
    each about EDGE_OPS per edge."""
    E = edges(cfg, S, T)
    return capture_bytes(cfg, S, T) + EDGE_BYTES * E, forward_ops(cfg, S, T) + EDGE_OPS * T * S * E


plan = input_plan(M_(TITLE), need)  # BudgetExceeded saying what fits (a shorter input)
