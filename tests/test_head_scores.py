"""Head scores against an independent reference: TransformerLens's detection patterns and its "mul" score, written
here from its head_detector.py in torch, applied to transformers' own output_attentions on the same ids (tiny random
GPT-2, Llama with grouped-query attention, BERT folders built here, tests/hf_one_stack.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import head_scores
from model.analysis import head_scores as hs
from model.analysis.batched_maps import head_maps
from model.checkpoints.loading import load_checkpoint
from tests.hf_one_stack import BUILDERS

FAMILIES = ("gpt2", "llama-gqa", "bert")
CORPUS = ("the cat sat on a mat and the cat sat", "birds sang while the dog ran to the red house", "a dog a dog")


# -- TransformerLens's head detector (transformer_lens/head_detector.py), in torch --------------------------------


def tl_previous(tokens: torch.Tensor) -> torch.Tensor:
    pattern = torch.zeros(tokens.shape[-1], tokens.shape[-1])
    pattern[1:, :-1] = torch.eye(tokens.shape[-1] - 1)
    return torch.tril(pattern)


def tl_duplicate(tokens: torch.Tensor) -> torch.Tensor:
    token_pattern = tokens.repeat(tokens.shape[-1], 1).T.numpy()  # "pos -> pos pos2"
    eq_mask = np.equal(token_pattern, token_pattern.T).astype(int)
    np.fill_diagonal(eq_mask, 0)
    return torch.tril(torch.as_tensor(eq_mask).float())


def tl_induction(tokens: torch.Tensor) -> torch.Tensor:
    duplicate = tl_duplicate(tokens)
    shifted = torch.roll(duplicate, shifts=1, dims=1)
    zeros = torch.zeros(duplicate.shape[0], 1)
    return torch.tril(torch.cat((zeros, shifted[:, 1:]), dim=1))


def tl_first(tokens: torch.Tensor) -> torch.Tensor:
    pattern = torch.zeros(tokens.shape[-1], tokens.shape[-1])
    pattern[:, 0] = 1
    return pattern


TL = {
    "previous_token": tl_previous,
    "duplicate_token": tl_duplicate,
    "induction": tl_induction,
    "first_token": tl_first,
}


def tl_score(attention: torch.Tensor, pattern: torch.Tensor) -> float:
    """compute_head_attention_similarity_score, error_measure="mul", exclude_bos=False, exclude_current_token=False."""
    return ((attention * pattern).sum() / attention.sum()).item()


def reference(family, ids_list, role) -> np.ndarray:
    """(L, H): detect_head's mean over the sequences, from transformers' attentions on these ids."""
    per_text = []
    for ids in ids_list:
        tokens = torch.tensor(ids)
        with torch.no_grad():
            out = family.hf(tokens[None], output_attentions=True)
        pattern = TL[role](tokens)
        per_text.append([[tl_score(layer[0, h], pattern) for h in range(layer.shape[1])] for layer in out.attentions])
    return np.mean(per_text, axis=0)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("head_scores")
    out = {}
    for name in FAMILIES:
        family = BUILDERS[name](root)
        model, tok = load_checkpoint(family.folder)
        out[name] = (family, model, tok)
    return out


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("role", hs.ROLES)
def test_scores_match_transformerlens_formulas_on_transformers_attentions(families, name, role):
    family, model, tok = families[name]
    if name == "llama-gqa":  # sentencepiece tokenizer.model: LlamaTokenizer's ids are BOS + pieces
        ids = [[family.start] + family.tokenizer.encode(t) for t in CORPUS]
    else:
        ids = [family.tokenizer(t)["input_ids"] for t in CORPUS]
    got = head_scores(model, tok, role, texts=list(CORPUS))
    want = reference(family, ids, role)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-4)
    # the default inputs (random tokens, repeated for induction and duplicate_token) read as the ids they are
    seqs = hs.default_items(model, tok, role, seed=3)
    assert len(seqs) == hs.RANDOM_TEXTS
    if role in hs.REPEATED:
        body = seqs[0][1:] if name != "gpt2" else seqs[0]
        body = body[:-1] if name == "bert" else body  # [CLS] ... [SEP]
        half = len(body) // 2
        assert body[:half] == body[half:]
    np.testing.assert_allclose(head_scores(model, tok, role, seed=3), reference(family, seqs, role), atol=1e-4)


def test_a_pattern_shifted_by_one_is_caught(families):
    """The reference with its pattern shifted one key to the right differs from the scores: the test above would
    fail if the library's pattern were off by one."""
    family, model, tok = families["gpt2"]
    ids = [family.tokenizer(t)["input_ids"] for t in CORPUS]
    for role in hs.ROLES:
        got = head_scores(model, tok, role, texts=list(CORPUS))
        shifted = dict(TL)
        TL[role] = lambda tokens, f=shifted[role]: torch.roll(f(tokens), shifts=1, dims=1).tril()
        try:
            off = reference(family, ids, role)
        finally:
            TL.update(shifted)
        assert np.abs(got - off).max() > 1e-2, role


def test_perfect_heads_score_what_the_formula_says():
    ids = [5, 6, 7, 8, 5, 6, 7, 8]
    induction = hs.detection_pattern("induction", ids)
    assert induction[4, 1] == 1 and induction[7, 4] == 1 and induction[:4].sum() == 0
    perfect = induction / np.maximum(induction.sum(-1, keepdims=True), 1)
    perfect[:4] = np.tril(np.ones((4, 8)))[:4] / np.arange(1, 5)[:, None]  # causal rows, uniform
    score = hs.pattern_scores(perfect[None, None], induction)[0, 0]
    assert score == pytest.approx(hs.perfect_score("induction", ids)) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        hs.detection_pattern("nothing", ids)


@pytest.mark.parametrize("name", FAMILIES)
def test_batched_maps_are_the_maps_capture_gives_each_input_alone(families, name):
    """map_each (passes of several inputs, equal lengths together, a BERT input holding its pad id alone) gives
    every input the ids and maps of capture() on that input by itself, in the inputs' order."""
    from model.analysis.batched_maps import map_each

    _, model, tok = families[name]
    items = [*CORPUS, CORPUS[0], *hs.default_items(model, tok, "induction", seed=1)[:3]]
    if name == "bert":
        items.append([5, 6, model.config.pad_id, 7])  # a padded key: its mask is its own
    kind = hs.default_kind(model)
    got = map_each(model, tok, items, kind, lambda ids, maps: (ids, maps), tokens=40)
    assert len(got) == len(items)
    for item, (ids, maps) in zip(items, got):
        want_ids, want = head_maps(model, tok, item, kind)
        assert list(ids) == list(want_ids)
        np.testing.assert_allclose(maps, want, atol=1e-6)
