"""model/analysis/pack_export.py: the model as data for the pack's in-page forward pass, and the models it refuses."""

from __future__ import annotations

import base64
import html
import re

import numpy as np
import pytest
import torch

from i18n import _, language_scope
from model import TransformerConfig, build_model, load_checkpoint
from model.analysis.lecture import pack_records
from model.analysis.pack_export import JS_POSITIONAL, MAX_BYTES, Unsupported, live_spec
from model.checkpoints.demos import list_demos
from model.network.config import POSITIONAL_KINDS
from model.network.positional import relative_position_bucket
from model.text.tokenizer import ListVocab, Tokenizer, Vocab
from viz.lecture_pack import lecture_pack_html


def tiny(**overrides):
    vocab = Vocab.build(list("abcdef"), "char")
    cfg = TransformerConfig.preset("tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), **overrides)
    return build_model(cfg, seed=0), Tokenizer(vocab, vocab)


def weights_of(spec, name):
    entry = spec["index"][name]
    numbers = np.frombuffer(base64.b64decode(spec["weights"]), dtype="<f4")
    return numbers[entry["offset"] : entry["offset"] + int(np.prod(entry["shape"]))].reshape(entry["shape"])


def test_every_parameter_is_there_once_and_exact():
    model, tok = tiny(share_embeddings=True, tie_generator=True)
    spec = live_spec(model, tok)
    for name, p in model.named_parameters(remove_duplicate=False):
        np.testing.assert_array_equal(weights_of(spec, name), p.detach().numpy())
    # the shared table and the tied output layer are one entry, stored once
    assert spec["index"]["tgt_embed.weight"] is spec["index"]["src_embed.weight"]
    assert spec["index"]["generator.weight"] is spec["index"]["src_embed.weight"]
    unique = sum(p.numel() for p in model.parameters())  # parameters() yields a shared tensor once
    assert spec["n_bytes"] == 4 * unique == len(base64.b64decode(spec["weights"]))
    assert spec["config"]["has_final_norm"] is False and spec["tokenizer"]["source"]["level"] == "char"


def test_a_model_above_the_size_limit_is_refused_with_its_size():
    model, tok = tiny()
    with pytest.raises(Unsupported) as err:
        live_spec(model, tok, max_bytes=1000)
    assert re.search(r"weights take 0\.\d MB, above the 0 MB", str(err.value))


def test_a_foreign_tokenizer_gives_a_pack_without_the_model_and_says_why():
    model, tok = tiny()
    words = ListVocab(["<pad>", "<s>", "</s>", "<unk>", "a", "b", "c", "d", "e", "f"], 0, 1, 2, 3)
    records = pack_records(model, Tokenizer(words, words), ["a b"])
    assert records.live is None and "tokenizers" in str(records.live_note)
    page = lecture_pack_html(records)
    assert 'id="pack-model"' not in page and "pack-input" not in page
    assert html.escape("This pack runs no model of its own: the page runs only this project's own tokenizers") in page
    with language_scope("zh"):
        zh = lecture_pack_html(records)
    assert _("Try your own input") in page and "此讲义包不自带可运行的模型" in zh


@pytest.mark.parametrize("demo", [d for d in list_demos() if d.name in ("reverse_learned", "fr_en")], ids=str)
def test_the_largest_demos_fit_the_budget(demo):
    """The demo with the most weights, and the one with the largest vocabularies: packs well under 15 MB."""
    model, tok = load_checkpoint(demo.path)
    spec = live_spec(model, tok)
    assert spec["n_bytes"] < MAX_BYTES
    page = lecture_pack_html(pack_records(model, tok, ["abc" if tok.source.level == "char" else "le chat"]))
    assert 'data-testid="pack-input"' in page and len(page.encode()) < 15_000_000


def test_every_positional_kind_runs_in_the_page_and_another_would_be_refused_by_name():
    """The page implements every kind the config allows (parity: tests/test_pack_parity_browser.py); a kind it had
    no function for would give a pack without the live model, naming the kind, rather than a page computing
    something else."""
    assert set(POSITIONAL_KINDS) <= set(JS_POSITIONAL)
    for kind in POSITIONAL_KINDS:
        model, tok = tiny(positional=kind)
        assert live_spec(model, tok)["config"]["positional"] == kind
    model, tok = tiny()
    model.config.positional = "xpos"  # as a config of a future kind would read; the page has no function for it
    with pytest.raises(Unsupported, match="positions of kind “xpos”"):
        live_spec(model, tok)


@pytest.mark.parametrize("field", ["ff_gated", "rescale_output", "embed_norm", "forced_bos_id"])
def test_what_the_page_does_not_compute_is_refused(field):
    model, tok = tiny(**{field: 1 if field == "forced_bos_id" else True})
    with pytest.raises(Unsupported, match="cannot run a gated feed-forward"):
        live_spec(model, tok)


@pytest.mark.parametrize("buckets, distance, max_len", [(32, 128, 128), (32, 128, 64), (8, 6, 24), (16, 40, 200)])
def test_relative_buckets_go_with_the_spec_for_every_distance_the_model_reads(buckets, distance, max_len):
    """Each stack's bucket of key - query for -R..R, the page clamping farther keys to R: the model's own bucket of
    every relative position up to max_len - 1, in both directions, encoder (bidirectional) and decoder."""
    model, tok = tiny(positional="relative", relative_buckets=buckets, relative_max_distance=distance, max_len=max_len)
    extra = live_spec(model, tok)["positions"]
    reach = extra["reach"]
    assert reach == min(distance, max_len - 1)
    rel = np.arange(-(max_len - 1), max_len)
    for side, bidirectional in (("source", True), ("target", False)):
        want = relative_position_bucket(torch.as_tensor(rel), bidirectional, buckets, distance).numpy()
        got = np.array(extra[side])[np.clip(rel, -reach, reach) + reach]
        np.testing.assert_array_equal(got, want, err_msg=side)
    assert live_spec(*tiny(positional="rope"))["positions"] == {}
