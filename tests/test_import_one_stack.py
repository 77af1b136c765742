"""Decoder-only and encoder-only Hugging Face folders (GPT-2, Llama with and without grouped-query attention,
Qwen2, BERT with and without its masked-LM head) against transformers itself: the same token ids from the same
tokenizer files, log-probabilities and every attention map of every query head within 1e-4, and greedy
continuations equal to generate(do_sample=False). Tiny random models and tokenizers are built in the test
(tests/hf_one_stack.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis.capture import capture
from model.checkpoints.loading import load_checkpoint
from model.decoding.greedy import greedy_decode
from tests.hf_one_stack import BUILDERS, TEXTS

DECODERS = ("gpt2", "llama", "llama-gqa", "qwen2")
ENCODERS = ("bert", "bert-mlm")


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_stack")
    out = {}
    for name, build in BUILDERS.items():
        family = build(root)
        model, tok = load_checkpoint(family.folder)
        out[name] = (family, model, tok)
    return out


def reference_ids(family, text: str) -> list[int]:
    """The token ids transformers' (or sentencepiece's, for tokenizer.model) tokenizer gives the text."""
    if family.name == "llama-gqa":  # LlamaTokenizer: BOS, then sentencepiece's pieces (add_bos_token true)
        return [family.start] + family.tokenizer.encode(text)
    return family.tokenizer(text)["input_ids"]


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_only_log_probs_and_every_attention_map_match_transformers(families, name):
    family, model, tok = families[name]
    assert model.config.shape == "decoder-only" and model.encoder.layers.__len__() == 0
    for text in TEXTS:
        ids = reference_ids(family, text)
        cap = capture(model, tok, text)
        assert cap.target_ids.tolist() == ids
        with torch.no_grad():
            out = family.hf(torch.tensor([ids]), output_attentions=True)
        want = out.logits[0].log_softmax(-1).numpy()
        assert cap.log_probs.shape == want.shape
        np.testing.assert_allclose(cap.log_probs, want, atol=1e-4)
        maps = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T) per query head
        assert cap.decoder_self.shape == maps.shape
        np.testing.assert_allclose(cap.decoder_self, maps, atol=1e-4)
        assert cap.encoder_self.size == 0 and cap.cross.size == 0 and cap.source_tokens == []


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_continuation_equals_generate(families, name):
    family, model, tok = families[name]
    text = TEXTS[0]
    ids = reference_ids(family, text)
    with torch.no_grad():
        out = family.hf.generate(
            torch.tensor([ids]), max_new_tokens=8, do_sample=False, pad_token_id=model.config.eos_id
        )
    want = out[0, len(ids) :].tolist()
    trace = greedy_decode(model, tok, text, max_new_tokens=8)
    assert trace.output_ids == want
    cached = greedy_decode(model, tok, text, max_new_tokens=8, use_cache=False)
    assert cached.output_ids == want


def test_grouped_query_attention_is_read_from_the_config(families):
    """Llama with 2 key/value heads for 4 query heads, Qwen2 with 2 for 6: the config says which one each reads,
    and the maps of a group differ (their queries do) while their recorded keys are the same."""
    for name, heads, kv in (("llama-gqa", 4, 2), ("qwen2", 6, 2)):
        family, model, tok = families[name]
        c = model.config
        assert (c.n_heads, c.kv_heads) == (heads, kv)
        assert [c.kv_head_of(h) for h in range(heads)] == [h // (heads // kv) for h in range(heads)]
        cap = capture(model, tok, TEXTS[1], qkv=True)
        q, k, v = cap.qkv["decoder_self"]
        assert np.array_equal(k[:, 0], k[:, 1]) and not np.array_equal(k[:, 0], k[:, heads - 1])
        assert not np.allclose(cap.decoder_self[:, 0], cap.decoder_self[:, 1])
    assert families["llama"][1].config.kv_heads == 4


def test_qwen2_has_biases_on_q_k_v_only(families):
    _, model, _ = families["qwen2"]
    attn = model.decoder.layers[0].self_attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None and attn.v_proj.bias is not None
    assert attn.out_proj.bias is None and model.decoder.layers[0].ff.linear1.bias is None


@pytest.mark.parametrize("name", ENCODERS)
def test_bert_every_attention_map_and_the_masked_lm_match_transformers(families, name):
    family, model, tok = families[name]
    assert model.config.shape == "encoder-only" and len(model.decoder.layers) == 0
    for text in TEXTS:
        ids = reference_ids(family, text)
        cap = capture(model, tok, text)
        assert cap.source_ids.tolist() == ids
        with torch.no_grad():
            out = family.hf(torch.tensor([ids]), output_attentions=True)
        maps = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, S, S)
        np.testing.assert_allclose(cap.encoder_self, maps, atol=1e-4)
        assert cap.decoder_self.size == 0 and cap.target_tokens == []
        if name == "bert-mlm":
            np.testing.assert_allclose(cap.log_probs, out.logits[0].log_softmax(-1).numpy(), atol=1e-4)
        else:
            assert cap.log_probs is None


@pytest.mark.parametrize("name", [*DECODERS, *ENCODERS])
def test_the_weights_are_read_once_and_adopted(families, name):
    """Every parameter is a view of the one buffer the weights file was read into (model/checkpoints/
    safetensors_read.py): no tensor is copied a second time (GPT-2's transposed Conv1D weights and split c_attn
    included), so loading holds the weights once at its peak."""
    _, model, _ = families[name]
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) == 1
