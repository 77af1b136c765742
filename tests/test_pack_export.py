"""pack/export.py: the model's graphs and tokenizer for the pack's text box, and the models it refuses."""

from __future__ import annotations

import base64
import html
import json
import re

import numpy as np
import onnx
import pytest

from i18n import _, language_scope
from model import TransformerConfig, build_model, load_checkpoint
from model.checkpoints.demos import list_demos
from model.network.config import POSITIONAL_KINDS
from model.text.tokenizer import IdVocab, ListVocab, Tokenizer, Vocab
from pack.export import MAX_BYTES, NO_TOKEN_LIST, Unsupported, live_spec
from pack.live import PACK_REFUSED
from pack.onnx_graphs import run_graphs, sessions
from pack.page import lecture_pack_html
from pack.records import pack_records


def tiny(**overrides):
    vocab = Vocab.build(list("abcdef"), "char")
    cfg = TransformerConfig.preset("tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), **overrides)
    return build_model(cfg, seed=0), Tokenizer(vocab, vocab)


def test_the_spec_carries_the_encoder_and_the_cached_step_graph_and_the_tokenizer():
    """An encoder-decoder's pack decodes by cached steps, as a folder pack: the encoder (with every decoder layer's
    cross-attention keys and values) and the one-token step with the key/value cache."""
    model, tok = tiny(share_embeddings=True, tie_generator=True)
    spec = live_spec(model, tok)
    graphs = {k: onnx.load_from_string(base64.b64decode(v)) for k, v in spec["graphs"].items()}
    assert list(graphs) == ["encoder", "step"]
    assert [i.name for i in graphs["encoder"].graph.input] == ["source_ids"]
    assert {o.name for o in graphs["encoder"].graph.output} >= {"cross_key.0", "cross_value.0", "memory"}
    step_inputs = [i.name for i in graphs["step"].graph.input]
    assert step_inputs[:4] == ["target_ids", "key_ids", "pad_mask", "source_ids"] and "past_key.0" in step_inputs
    # what the page draws, from the graphs: the maps in the layout of the stored inputs, each step's rows and top 5
    assert "encoder_self" in {o.name for o in graphs["encoder"].graph.output}
    views = {"decoder_self", "cross", "step_self", "step_cross", "top_ids", "top_probs"}
    assert views <= {o.name for o in graphs["step"].graph.output}
    assert spec["n_bytes"] == sum(len(base64.b64decode(v)) for v in spec["graphs"].values())
    assert spec["config"]["has_final_norm"] is False and spec["tokenizer"]["source"]["level"] == "char"


def test_a_model_above_the_size_limit_is_refused_with_its_size():
    model, tok = tiny()
    with pytest.raises(Unsupported) as err:
        live_spec(model, tok, max_bytes=1000)
    assert re.search(r"weights take 0\.\d MB, above the 0 MB", str(err.value))


def test_a_model_without_token_lists_gives_a_pack_without_the_model_and_says_why():
    model, tok = tiny()
    ids = IdVocab(10, 0, 1, 2, 3)  # a checkpoint without its vocabulary: token ids are typed
    records = pack_records(model, Tokenizer(ids, ids), ["4 5"])
    assert records.live is None and records.live_note.template == NO_TOKEN_LIST
    page = lecture_pack_html(records)
    assert 'id="pack-model"' not in page and "pack-input" not in page
    assert html.escape(_(PACK_REFUSED).format(why=_(records.live_note))) in page
    with language_scope("zh"):
        zh = lecture_pack_html(records)
    assert _("Try your own input") in page and "此讲义包不自带可运行的模型" in zh


def test_someone_elses_token_list_packs_with_its_own_description():
    """A ListVocab (the word lists of the Annotated Transformer, torchtext, ...): its tokenizer.json (which ListVocab
    runs too) and its special tokens' ids go to the page. The reading, recomputed here: whitespace-separated words,
    each character lower-cased alone (a capital sigma is σ, as in `tokenizers`), looked up whole, <s> in front."""
    model, tok = tiny()
    tokens = ["<s>", "</s>", "<blank>", "<unk>", "a", "b,", "c", "ασ", "ας", "f"]
    words = ListVocab(tokens, 2, 0, 1, 3, lowercase=True, prepend_bos=True)
    side = live_spec(model, Tokenizer(words, words))["tokenizer"]["source"]
    assert side["json"] == words.description() and side["tokens"] == tokens
    assert {k: side[k] for k in ("pad_id", "bos_id", "eos_id", "unk_id", "prepend_bos")} == {
        "pad_id": 2, "bos_id": 0, "eos_id": 1, "unk_id": 3, "prepend_bos": True
    }  # fmt: skip
    for text in ("a B, c", "A zz b,", "ΑΣ a", "  f\tC  "):
        lowered = ["".join(ch.lower() for ch in w) for w in text.split()]
        assert words.encode(text) == [0] + [tokens.index(w) if w in tokens else 3 for w in lowered], text
    assert words.encode("ΑΣ") == [0, 7]


@pytest.mark.parametrize("demo", [d for d in list_demos() if d.name in ("reverse_learned", "fr_en")], ids=str)
def test_the_largest_demos_fit_the_budget(demo):
    """The demo with the most weights, and the one with the largest vocabularies: packs well under 20 MB."""
    model, tok = load_checkpoint(demo.path)
    spec = live_spec(model, tok)
    assert spec["n_bytes"] < MAX_BYTES
    page = lecture_pack_html(pack_records(model, tok, ["abc" if tok.source.level == "char" else "le chat"]))
    assert 'data-testid="pack-input"' in page and len(page.encode()) < 20_000_000


def test_every_positional_kind_and_what_the_hand_written_page_refused_now_packs():
    """The page runs the model's own graph: no kind or feature needs code of its own in the page (parity:
    tests/test_onnx_export.py and tests/test_pack_parity_browser.py)."""
    for kind in POSITIONAL_KINDS:
        model, tok = tiny(positional=kind)
        assert live_spec(model, tok)["config"]["positional"] == kind
    model, tok = tiny(ff_gated=True, rescale_output=True, embed_norm=True, forced_bos_id=4, norm="rms")
    assert live_spec(model, tok)["config"]["forced_bos_id"] == 4


def test_the_apps_other_checks_go_as_data_the_page_can_apply():
    """tasks.cards.pack_checks: the card's trained lengths and the task's grammar, as the page's script reads them
    (a word's class, None for adjective-only words, which patterns leave out): the app's "a guess" sentence for
    "le chat noir mange", none for a card example."""
    from model.checkpoints.checkpoint import load_card
    from tasks.cards import grammar_warning, pack_checks

    card = load_card(next(d.path for d in list_demos() if d.name == "fr_en"))
    checks = pack_checks(card)
    bounds = card["input_tokens"]
    assert checks["trained"] == {"low": bounds["min"], "high": bounds["max"], "unit": bounds["unit"]}
    grammar = checks["grammar"]

    def pattern(text: str) -> str:
        words = [re.sub(grammar["ends"], "", w) for w in text.lower().split()]
        return " ".join(grammar["classes"][w] for w in words if w and grammar["classes"][w] is not None)

    assert grammar_warning(card, "le chat noir mange") and pattern("le chat noir mange") not in grammar["patterns"]
    example = card["examples"][0]
    assert not grammar_warning(card, example) and pattern(example) in grammar["patterns"]
    assert pattern("«Le chat noir mange», la souris!") == pattern("le chat noir mange la souris")  # punctuation off
    assert pack_checks({}) == {}


def test_decoder_only_and_encoder_only_models_pack_with_their_one_graph():
    """A decoder-only model: its decoder's graph alone, reading target_ids; an encoder-only one (no output head): its
    encoder's, reading source_ids, with no log-probs. Both packs carry the text box and the self-attention view only."""
    for shape, graph, kind in (
        ("decoder-only", "decoder", "decoder_self"),
        ("encoder-only", "encoder", "encoder_self"),
    ):
        extra = {"n_encoder_layers": 0} if shape == "decoder-only" else {"n_decoder_layers": 0, "output_head": "none"}
        model, tok = tiny(shape=shape, share_embeddings=True, **extra)
        spec = live_spec(model, tok)
        assert list(spec["graphs"]) == [graph]
        proto = onnx.load_from_string(base64.b64decode(spec["graphs"][graph]))
        assert [i.name for i in proto.graph.input] == [f"{'target' if graph == 'decoder' else 'source'}_ids"]
        outputs = [o.name for o in proto.graph.output]
        assert ("log_probs" in outputs) == (shape == "decoder-only") and f"{kind}.1" in outputs and kind in outputs
        assert ("top_ids" in outputs) == (shape == "decoder-only")  # the candidates the page's greedy loop reads
        records = pack_records(model, tok, ["abc"])
        assert records.live is not None and (records.inputs[0].trace is None) == (shape == "encoder-only")
        page = lecture_pack_html(records)
        assert 'data-testid="pack-input"' in page and f'id="in0-{kind}"' in page
        assert 'class="decoding"' not in page and 'id="in0-cross"' not in page


def test_a_sliding_window_model_packs_its_band_as_masked_cells():
    """A decoder-only model with a local layer (window 2) and a global one: the maps of the precomputed input and
    those the page's graph gives a typed input are NaN (drawn grey, as masked) outside the band of the local layer and
    above the diagonal of both, and the layer menu names the local layer's window."""
    model, tok = tiny(
        shape="decoder-only",
        n_encoder_layers=0,
        share_embeddings=True,
        sliding_window=2,
        layer_types=["local", "global"],
    )
    spec = live_spec(model, tok)
    records = pack_records(model, tok, ["abcdef"])
    page = lecture_pack_html(records)
    data = json.loads(re.search(r'id="pack-data">(.*?)</script>', page, re.S).group(1))
    att = data["inputs"][0]["attention"]["decoder_self"]
    L, H1, T, _T = att["shape"]
    stored = np.frombuffer(base64.b64decode(att["z"]), dtype="<u2").reshape(L, H1, T, T) == 65535
    runs = sessions({k: base64.b64decode(v) for k, v in spec["graphs"].items()})
    typed = np.isnan(run_graphs(runs, [], records.inputs[0].capture.target_ids.tolist())["decoder_self"])
    query, key = np.indices((T, T))
    for masked in (stored, typed):
        assert T > 3 and (masked[0] == ((key > query) | (query - key >= 2))).all()  # the band, every head and the mean
        assert (masked[1] == (key > query)).all()  # the global layer: the causal mask alone
    menu = re.search(r'<select class="layer">(.*?)</select>', page).group(1)
    assert html.escape(_("layer {i} · local ({w})").format(i=0, w=2)) in menu
