"""Gradient × input: ‖x_s ⊙ ∂ log p(y_t) / ∂x_s‖₂, x the source token embeddings (Captum InputXGradient), the length
over the embedding (the signed sum x_s · ∇ cancels out)."""

from __future__ import annotations

from i18n import M_, N_

from ..budget import Plan, admit_input, backward_bytes, forward_ops, gradient_rows
from .passes import gradients

NAME = "grad_x_input"
TITLE = N_("Gradient × input")
EXPLANATION = N_(
    "**Gradient × input**: a {read}'s embedding times (elementwise) the gradient of the log-probability of the "
    "{written} with respect to it (Captum), its length over the embedding. Unsigned: the signed sum "
    "cancels out. Small where the model is sure (the softmax saturates); the order of the tokens stays."
)
SETTINGS = ()
CHEAP = True


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    scores, logp, _ = gradients(model, prep, False, None, 1, changes, batch_size, progress, options.get("plan"))
    return scores, {"baseline": options["baseline"]}, {"log_probs": logp}


def plan(cfg, S: int, T: int, settings: dict, budget) -> Plan:
    """One forward and backward pass per output row (3 forward passes' work), as many rows at once as what autograd
    keeps for them fits (budget.gradient_rows); BudgetExceeded saying what fits (a shorter input)."""
    rows = gradient_rows(cfg, S, T, budget)
    fitted = admit_input(
        budget, M_(TITLE), lambda s, t: (backward_bytes(cfg, s, t), 3 * t * forward_ops(cfg, s, t)), S, T
    )
    rows = min(rows, T)
    return Plan(rows=rows, pieces=T, ops=fitted.ops, bytes=rows * backward_bytes(cfg, S, T))
