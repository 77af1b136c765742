"""Attention rollout into the decoder (model/analysis/attribution_graph.py states the rule); rows sum to 1."""

from __future__ import annotations

from i18n import M_, N_

from ..budget import F32, capture_bytes, forward_ops, input_plan
from .passes import graph_scores

NAME = "rollout"
TITLE = N_("Attention rollout")
EXPLANATION = N_(
    "**Attention rollout** (Abnar & Zuidema 2020): each layer's attention, heads averaged, with the residual "
    "counted as 0.5 I + 0.5 A, {rollout}. Rows sum to 1. Heads switched off are left out of the averages."
)
SETTINGS = ()
CHEAP = True


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    return graph_scores(model, tokenizer, source, target, NAME, changes, len(prep.scored), progress, prep), {}, {}


def need(cfg, S: int, T: int) -> tuple[int, int]:
    """(bytes, operations): one recorded pass (every map kept) and the rollout's float64 matrices, (S, S) and (T, S)
    per layer, and their products."""
    layers = cfg.n_encoder_layers + cfg.n_decoder_layers
    matrices = 2 * F32 * 3 * layers * (S * S + T * T + T * S)
    products = 2 * layers * (S**3 + T * T * S + T * S * S)
    return capture_bytes(cfg, S, T) + matrices, forward_ops(cfg, S, T) + products


plan = input_plan(M_(TITLE), need)  # BudgetExceeded saying what fits (a shorter input)
