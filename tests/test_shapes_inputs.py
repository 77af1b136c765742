"""What the library says at the edges of a model's shape: decoding a model that writes nothing, a folder without
weights, a prompt that fills a decoder-only model's context, and the tokens a long input loses."""

from __future__ import annotations

import shutil

import pytest

from model import capture, greedy_decode, load_checkpoint
from model.checkpoints.formats.gpt2 import TITLE as GPT2_TITLE
from model.decoding.core import NO_DECODING
from model.text.inputs import MAX_LEN_CUT, check_text, prepare_sequence, text_room
from tests.hf_one_stack import BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes-inputs")
    return {name: BUILDERS[name](root) for name in ("gpt2", "bert-mlm")}


def words_of(tok, n: int, word: str = " cat") -> str:
    """A text of exactly n tokens of the folder's tokenizer (one token per repeated word)."""
    return next(text for k in range(n + 1) if len(tok.source.encode(text := "the" + word * k)) == n)


def test_decoding_an_encoder_only_model_is_refused_with_a_message(folders):
    model, tok = load_checkpoint(folders["bert-mlm"].folder)
    with pytest.raises(ValueError) as err:
        greedy_decode(model, tok, "the cat sat")
    assert err.value.args[0].template == NO_DECODING


def test_a_folder_without_weights_is_named_by_its_own_format(folders, tmp_path):
    from model.checkpoints.errors import CheckpointError

    bare = tmp_path / "gpt2-bare"
    shutil.copytree(folders["gpt2"].folder, bare)
    (bare / "model.safetensors").unlink()
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(bare)
    assert err.value.args[0].values["title"] == GPT2_TITLE


def test_a_decoder_only_prompt_is_checked_against_the_context_it_reads(folders):
    model, tok = load_checkpoint(folders["gpt2"].folder)
    n = model.config.max_len
    whole = check_text(words_of(tok, n), tok.source, text_room(model.config))
    assert not whole.warnings  # exactly the context: nothing cut
    assert len(prepare_sequence(model, tok, words_of(tok, n)).ids) == n
    over = check_text(words_of(tok, n + 7), tok.source, text_room(model.config))
    (cut,) = over.warnings
    kept = prepare_sequence(model, tok, words_of(tok, n + 7))
    assert cut.template == MAX_LEN_CUT and cut.values["room"] == len(kept.ids) == n
    assert cut.values["dropped"] == kept.truncated == 7


def test_source_truncated_counts_every_token_an_encoder_input_lost(folders):
    model, tok = load_checkpoint(folders["bert-mlm"].folder)
    text = words_of(tok, 300)  # far more than the 40 positions
    # transformers' own tokenizer of the folder: [CLS] text [SEP], of which the capture keeps [CLS] ... [SEP]
    total = len(folders["bert-mlm"].tokenizer(text)["input_ids"])
    cap = capture(model, tok, text)
    assert cap.source_truncated == total - len(cap.source_tokens) > 200
