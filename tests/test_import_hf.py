"""Hugging Face T5, flan-T5, BART and mBART folders opened by load_checkpoint into the one Transformer, compared
with transformers itself on tiny random-weight models built here (tests/hf_families.py): source token ids
equal, log-probabilities and every attention map within 1e-4, greedy output equal to generate(num_beams=1)."""

import math
import re

import pytest
import torch

from model import capture, load_checkpoint
from model.decoding import greedy_ids
from model.decoding.beam import beam_search
from model.text.inputs import prepare_source, prepare_target
from tests.hf_families import TEXTS, build_all
from tests.i18n_helpers import matching, msgid_starting
from tests.import_helpers import assert_loaded_without_copies, our_run

CUT = msgid_starting("The {what} has {n} tokens but this model reads at most {room}: cut after")

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")
pytestmark = pytest.mark.filterwarnings("ignore")

TOL = 1e-4
NAMES = ("t5", "flan-t5", "bart", "mbart")
MEASURED: dict[str, dict[str, float]] = {}  # family -> largest differences (printed at the end of the module)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    built = build_all(tmp_path_factory.mktemp("hf"))
    yield {name: (f, *load_checkpoint(f.folder)) for name, f in built.items()}
    for name, found in MEASURED.items():
        print(f"\n{name}: " + ", ".join(f"{k} {v:.2e}" for k, v in found.items()))


def note(name: str, what: str, value: float) -> None:
    MEASURED.setdefault(name, {})
    MEASURED[name][what] = max(MEASURED[name].get(what, 0.0), value)


@pytest.mark.parametrize("name", NAMES)
def test_source_token_ids_equal_the_folders_tokenizer(families, name):
    fam, model, tok = families[name]
    for text in TEXTS:
        ours = prepare_source(model, tok, text).ids
        assert ours == fam.tokenizer(text)["input_ids"], text
    assert tok.source.detokenize(tok.source.decode(prepare_source(model, tok, TEXTS[0]).ids)) == TEXTS[0]


def batch(fam, model, tok):
    """Two sources (the second padded) and decoder inputs as generation builds them: start, forced token, text."""
    rows = [prepare_source(model, tok, t).ids for t in TEXTS[:2]]
    width = max(map(len, rows))
    pad = model.config.pad_id
    src = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    targets = [prepare_target(model, tok.target, t)[0] for t in ("the red house", "a dog ran on the mat")]
    length = min(map(len, targets))
    tgt = torch.tensor([t[:length] for t in targets])
    return src, (src != pad).long(), tgt


@pytest.mark.parametrize("name", NAMES)
@torch.no_grad()
def test_log_probs_and_every_attention_map_match_transformers(families, name):
    fam, model, tok = families[name]
    src, mask, tgt = batch(fam, model, tok)
    assert int(tgt[0, 0]) == fam.start and (fam.forced is None or int(tgt[0, 1]) == fam.forced)
    out = fam.hf(input_ids=src, attention_mask=mask, decoder_input_ids=tgt, output_attentions=True)
    logits, maps = our_run(model, src, tgt)
    diff = (logits.log_softmax(-1) - out.logits.log_softmax(-1)).abs().max().item()
    note(name, "log-probs", diff)
    assert diff < TOL
    theirs = {
        "encoder_self": out.encoder_attentions,
        "decoder_self": out.decoder_attentions,
        "cross": out.cross_attentions,
    }
    for kind, layers in theirs.items():
        assert len(maps[kind]) == len(layers) >= 2
        for i, (a, b) in enumerate(zip(maps[kind], layers)):
            b = b * mask[:, None, None, :] if kind != "decoder_self" else b  # transformers leaves ~1e-9 on padding
            assert a.shape == b.shape, (kind, i)
            err = (a - b).abs().max().item()
            note(name, "attention", err)
            assert err < TOL, (kind, i, err)


@pytest.mark.parametrize("name", NAMES)
@torch.no_grad()
def test_greedy_output_equals_generate(families, name):
    fam, model, tok = families[name]
    for text in TEXTS[:3]:
        ids = prepare_source(model, tok, text).ids
        ours = greedy_ids(model, [ids], max_steps=10)[0]
        theirs = fam.hf.generate(
            torch.tensor([ids]), num_beams=1, do_sample=False, max_new_tokens=10, forced_eos_token_id=None
        )[0].tolist()
        assert theirs[0] == fam.start
        assert ours == theirs[1 : 1 + len(ours)] and len(theirs) - 1 == len(ours), (text, ours, theirs)
        if fam.forced is not None:
            assert ours[0] == fam.forced


@pytest.mark.parametrize("name", NAMES)
@torch.no_grad()
def test_the_families_differences_are_configuration(families, name):
    _, model, _ = families[name]
    c = model.config
    t5 = name in ("t5", "flan-t5")
    assert (c.norm, c.bias, c.scale_scores, c.scale_embeddings) == (
        ("rms", False, False, False) if t5 else ("layernorm", True, True, name == "mbart")
    )
    assert c.positional == ("relative" if t5 else "learned")
    assert c.norm_first == c.has_final_norm == (name != "bart")
    assert c.ff_gated == (name == "flan-t5") and c.rescale_output == (name == "t5")
    assert c.tie_generator == (name != "flan-t5") and c.embed_norm == (not t5)
    if name == "flan-t5":
        assert c.attention_width == 6 * 8 != c.d_model and c.activation == "gelu_tanh"


@pytest.mark.parametrize("name", NAMES)
@torch.no_grad()
def test_captures_beam_search_and_interventions_run_on_each_family(families, name):
    _, model, tok = families[name]
    cap = capture(model, tok, TEXTS[0], qkv=True)
    assert cap.encoder_self.shape[0] == model.config.n_encoder_layers
    assert cap.source_tokens == tok.source.decode(prepare_source(model, tok, TEXTS[0]).ids)
    ablated = capture(model, tok, TEXTS[0], ablate=[("encoder_self", 0, 1)])
    assert ablated.log_probs.shape == cap.log_probs.shape and not (ablated.log_probs == cap.log_probs).all()
    trace = beam_search(model, tok, TEXTS[1], beam_size=3, max_len=6)
    assert trace.best is not None and len(trace.best.output_ids) >= 1
    if model.config.forced_bos_id is not None:  # one hypothesis after the forced step, every score finite
        assert trace.best.output_ids[0] == model.config.forced_bos_id and len(trace.steps[0].live) == 1
    assert all(math.isfinite(h.log_prob) for step in trace.steps for h in step.live + step.finished + step.pruned)


@pytest.mark.parametrize("name", ["t5", "mbart"])
@torch.no_grad()
def test_a_lecture_pack_and_a_comparison_of_each_family(families, name):
    from model.analysis.compare import decoder_input_text, mismatches
    from pack.page import lecture_pack_html
    from pack.records import pack_records

    _, model, tok = families[name]
    records = pack_records(model, tok, list(TEXTS[:2]), name)
    page = lecture_pack_html(records, name)
    assert page.count("<html") == 1 and len(records.inputs) == 2
    assert records.inputs[0].capture.source_tokens[0] in page or "▁the" in page
    a = capture(model, tok, TEXTS[0], target="the red house")  # B reads A's decoder input (forced prefix included)
    b = capture(model, tok, TEXTS[0], target=decoder_input_text(a, tok.target.detokenize))
    assert list(b.target_ids) == list(a.target_ids)
    assert all(mismatches(a, b, kind) == [] for kind in ("encoder_self", "decoder_self", "cross"))
    assert abs(a.cross - b.cross).max() < 1e-5


@pytest.mark.parametrize("name", NAMES)
@torch.no_grad()
def test_positions_switched_off_change_each_familys_output(families, name):
    """T5's relative bias and BART's learned table are the positions the interventions act on."""
    _, model, tok = families[name]
    plain = capture(model, tok, TEXTS[1], target="the red house")
    off = capture(model, tok, TEXTS[1], target="the red house", positional="off")
    assert off.interventions and off.log_probs.shape == plain.log_probs.shape
    assert abs(off.encoder_self - plain.encoder_self).max() > 1e-3


@pytest.mark.parametrize("name", ["bart", "mbart"])
def test_the_cut_warning_counts_the_tokens_a_source_adds(families, name):
    """BART's <s> and mBART's language code take room: the warning says what prepare_source really keeps."""
    from model.text.inputs import check_text

    _, model, tok = families[name]
    text = " ".join(["the cat sat on a mat"] * 20)  # well past max_len = 40
    src = prepare_source(model, tok, text)
    check = check_text(text, tok.source, model.config.max_len - 1)
    kept_ids = [i for i in src.ids if i not in (tok.source.eos_id, *tok.source.after_eos, *tok.source.prefix)]
    assert len(src.ids) == model.config.max_len and src.truncated > 0
    assert any(re.search(matching(CUT, room=len(kept_ids)), w) for w in check.warnings), check.warnings


@pytest.mark.parametrize("name", NAMES)
def test_the_size_check_counts_what_each_family_allocates(families, name):
    """parameter_count (the limit checked before building) is exact for the new fields: head_dim, no biases, the
    gated feed-forward, RMS norms, embedding norms, the relative bias tables."""
    from model.network.config import parameter_count

    _, model, _ = families[name]
    numbers = sum(p.numel() for p in model.parameters())  # each tied tensor once
    tables = [pe.table for _, pe in model.positional_encodings() if "table" in pe._buffers]
    numbers += sum(t.untyped_storage().nbytes() // t.element_size() for t in tables)  # a zero view: one row
    assert parameter_count(model.config) == numbers


@pytest.mark.parametrize("name", NAMES)
def test_the_weights_are_loaded_without_copies(families, name, monkeypatch):
    """No tensor is copied while loading: views of the file's mapping by default, views of one
    buffer read from it with VIZ_MAP_WEIGHTS=0 (tests/import_helpers.assert_loaded_without_copies)."""
    assert_loaded_without_copies(families[name][0].folder, monkeypatch)
