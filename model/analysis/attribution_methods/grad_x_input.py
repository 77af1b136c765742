"""Gradient × input: ‖x_s ⊙ ∂ log p(y_t) / ∂x_s‖₂, x the source token embeddings (Captum InputXGradient), the length
over the embedding (the signed sum x_s · ∇ cancels out)."""

from __future__ import annotations

from i18n import N_

from .passes import gradients

NAME = "grad_x_input"
TITLE = N_("Gradient × input")
EXPLANATION = N_(
    "**Gradient × input**: the source token's embedding times (elementwise) the gradient of the output token's "
    "log-probability with respect to it (Captum), its length over the embedding. Unsigned: the signed sum "
    "cancels out. Small where the model is sure (the softmax saturates); the order of the tokens stays."
)
SETTINGS = ()
CHEAP = True


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    scores, logp, _ = gradients(model, prep, False, None, 1, changes, batch_size, progress, options.get("plan"))
    return scores, {"baseline": options["baseline"]}, {"log_probs": logp}
