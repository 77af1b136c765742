"""Sampling: each token drawn from the model's distribution after temperature, top-k and top-p (a seeded draw)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from i18n import N_

from ..interventions import Interventions
from ..text.inputs import device_of
from ..text.tokenizer import Tokenizer
from .settings import Setting
from .trace import Trace, decode_trace

NAME = "sampling"
TITLE = N_("Sampling")  # the decoding page's menu
LINK = "sample"  # how the page's link writes it (dec_strategy=...; links made before the registry say so)
APP = "ui.views.decoding_views.sampling"  # its app half: the view the decoding page shows
MAX_TEMPERATURE = 5.0
MAX_SEED = 2**31 - 1
SETTINGS = (
    Setting("temperature", "dec_temp", 1.0, 0.0, MAX_TEMPERATURE, N_("Temperature"), N_("the temperature"),
            N_("Divides the logits: below 1 sharper, above 1 flatter; 0 is greedy decoding."), step=0.1, digits=2),
    Setting("top_k", "dec_sk", 0, 0, None, N_("Top-k (0: all)"), N_("top-k")),
    Setting("top_p", "dec_sp", 1.0, 0.01, 1.0, N_("Top-p"), N_("top-p"),
            N_("Keep the most probable tokens until their probabilities reach p (the nucleus)."), step=0.05, digits=2),
    Setting("seed", "dec_seed", 0, 0, MAX_SEED, N_("Seed"), N_("the seed"), N_("The same seed draws the same tokens.")),
)  # fmt: skip


def sampling_distribution(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """(..., V) probabilities a token is drawn from: softmax(logits / temperature), cut to the top_k
    most probable tokens (0: all) and renormalised, then cut to the smallest set whose probability reaches top_p
    (the nucleus, measured on the top-k tokens' renormalised probabilities), renormalised: the order and the
    definition of Hugging Face's generate (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper).
    temperature 0 puts all mass on the argmax (greedy)."""
    logits = logits.float()
    if temperature <= 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).float()
    probs = (logits / temperature).softmax(-1)
    if 0 < top_k < probs.size(-1):
        kth = probs.topk(top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest probability
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(-1, keepdim=True)  # top-p reads the top-k tokens' own distribution
    if top_p < 1.0:
        sorted_p, order = probs.sort(-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p  # mass of the more probable tokens
        keep_sorted = before < top_p  # the most probable token is always kept
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum(-1, keepdim=True)


@torch.no_grad()
def sample(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    max_len: int | None = None,
    shown: int = 5,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    shuffle_seed: int = 0,
    interventions: Interventions | None = None,
) -> Trace:
    """Decode `source` by drawing each token from `sampling_distribution`, recording every step like
    `greedy_decode`. The same seed gives the same draw; temperature 0 is greedy decoding.

    Each Step's prob, top_ids and top_probs describe the distribution the token was drawn from
    (after temperature, top_k and top_p); `shown` candidates are kept per step.
    interventions, or the keywords ablate, positional, shift as in `greedy_decode`; shuffle_seed is their `seed`
    (which permutation positional="shuffled" uses), named apart from the seed of the draw.
    """
    changes = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=shuffle_seed)
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0:
        raise ValueError("sampling needs temperature >= 0, 0 < top_p <= 1 and top_k >= 0")
    generator = torch.Generator(device=device_of(model)).manual_seed(int(seed))

    def distribution(logits: torch.Tensor) -> torch.Tensor:
        return sampling_distribution(logits, temperature, top_k, top_p)

    def choose(t: int, logits: torch.Tensor) -> torch.Tensor:
        if temperature <= 0:
            return logits.argmax(-1)
        return torch.multinomial(distribution(logits), 1, generator=generator)[:, 0]

    return decode_trace(model, tokenizer, source, choose, max_len, shown, distribution=distribution,
                        interventions=changes)  # fmt: skip


# the registry's decode(model, tokenizer, source, *, interventions, max_len, **settings): sample's own keywords
decode = sample
