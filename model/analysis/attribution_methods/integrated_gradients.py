"""Integrated gradients: Σ_d (x - x')_sd ∫_0^1 ∂ log p(y_t)(x' + α(x - x')) / ∂x_sd dα (Captum IntegratedGradients,
Gauss-Legendre with `steps` points per piece of the path, passes._integrated); x' the baseline: every source token's
embedding replaced by the "pad" (default) or "unk" token's, or "zero" embeddings. Completeness: a row sums to
log p(y_t | x) - log p(y_t | x') within 1% with the default steps."""

from __future__ import annotations

from i18n import N_

from . import Choice
from .passes import gradients, special_id

NAME = "integrated_gradients"
TITLE = N_("Integrated gradients")
EXPLANATION = N_(
    "**Integrated gradients** (Sundararajan et al. 2017, Captum): the gradient averaged along the straight path "
    "from a baseline (below) to the source embeddings, times their difference. A row sums to the change in the "
    "output token's log-probability from the baseline to the input (completeness; the path is cut into more "
    "pieces until it holds within 0.4%)."
)
BASELINES = {
    "zero": N_("zero embeddings"),
    "pad": N_("the <pad> token everywhere"),
    "unk": N_("the <unk> token everywhere"),
}
STEPS = {8: "8", 16: "16", 32: "32", 64: "64", 128: "128"}
SETTINGS = (
    Choice("baseline", "attr_base", "pad", BASELINES, N_("Baseline of integrated gradients")),
    Choice("steps", "attr_steps", 32, STEPS, N_("Points per piece of the path")),
)
CHEAP = False  # a backward pass per point of the path, the path cut into pieces until complete: seconds


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    baseline, steps = options["baseline"], options["steps"]
    base_id = None if baseline == "zero" else special_id(tokenizer, baseline)
    scores, logp, expected = gradients(
        model, prep, True, base_id, steps, changes, batch_size, progress, options.get("plan")
    )
    return scores, {"baseline": baseline, "steps": steps}, {"log_probs": logp, "expected_sums": expected}
