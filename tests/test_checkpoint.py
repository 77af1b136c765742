import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from harness.reference.annotated import ann_make_model
from model import CheckpointError, Tokenizer, TransformerConfig, Vocab, build_model, load_checkpoint, save_checkpoint
from model.checkpoints.checkpoint import load_card
from tests.conftest import make_tiny
from tests.i18n_helpers import matching, msgid, msgid_starting

FIELDS = msgid("the config has {n} field this project does not know (not named here)")
NO_FORMAT = msgid_starting("{name} is a file that holds no checkpoint format I know")


def outputs(model):
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, model.config.src_vocab_size, (2, 7), generator=g)
    tgt = torch.randint(4, model.config.tgt_vocab_size, (2, 5), generator=g)
    with torch.no_grad():
        return model(src, tgt)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"positional": "learned", "norm_first": True},
        {"share_embeddings": True, "tie_generator": True},
        {"positional": "none"},
    ],
)
def test_round_trip_gives_identical_outputs(tmp_path, char_tokenizer, overrides):
    model = make_tiny(char_tokenizer, seed=7, **overrides)
    save_checkpoint(model, char_tokenizer, tmp_path / "ckpt", card={"task": "test"})
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
        "card.json",
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    loaded, tok = load_checkpoint(tmp_path / "ckpt")
    assert not loaded.training
    assert loaded.config == model.config
    assert tok.to_dict() == char_tokenizer.to_dict()
    assert torch.equal(outputs(loaded), outputs(model))
    assert load_card(tmp_path / "ckpt") == {"task": "test"}
    if overrides.get("tie_generator"):
        assert loaded.generator.weight is loaded.tgt_embed.weight
        assert "generator.weight" not in load_file(str(tmp_path / "ckpt" / "model.safetensors"))


def test_separate_vocabularies_round_trip(tmp_path):
    tok = Tokenizer(Vocab.build("abc", level="char"), Vocab.build(["x", "y", "z", "w"], level="word"))
    model = build_model(TransformerConfig.preset("tiny", src_vocab_size=7, tgt_vocab_size=8), seed=2)
    save_checkpoint(model, tok, tmp_path / "c")
    loaded, back = load_checkpoint(tmp_path / "c")
    assert (back.source.level, back.target.level) == ("char", "word")
    assert torch.equal(outputs(loaded), outputs(model))


@pytest.fixture
def saved(tmp_path, char_tokenizer):
    model = make_tiny(char_tokenizer)
    return save_checkpoint(model, char_tokenizer, tmp_path / "ckpt")


def test_missing_key_is_named(saved):
    weights = load_file(str(saved / "model.safetensors"))
    del weights["decoder.layers.1.cross_attn.k_proj.weight"]
    save_file(weights, str(saved / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"missing keys: decoder\.layers\.1\.cross_attn\.k_proj\.weight"):
        load_checkpoint(saved)


def test_unexpected_key_is_named(saved):
    weights = load_file(str(saved / "model.safetensors"))
    weights["encoder.layers.9.extra"] = torch.zeros(3)
    save_file(weights, str(saved / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected keys: encoder\.layers\.9\.extra"):
        load_checkpoint(saved)


def test_wrong_shape_names_key_and_both_shapes(saved):
    weights = load_file(str(saved / "model.safetensors"))
    weights["encoder.layers.0.ff.linear1.weight"] = torch.zeros(40, 24)
    save_file(weights, str(saved / "model.safetensors"))
    with pytest.raises(
        CheckpointError,
        match=matching(
            "{key}: file has {found}, the config needs {needed}",
            key="encoder.layers.0.ff.linear1.weight",
            found=(40, 24),
            needed=(32, 24),
        ),
    ):
        load_checkpoint(saved)


def test_config_that_disagrees_with_weights(saved):
    config = json.loads((saved / "config.json").read_text())
    config["n_decoder_layers"] = 3
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"missing keys: decoder\.layers\.2\."):
        load_checkpoint(saved)


@pytest.mark.parametrize("damage", [b"", b"not a safetensors file at all", None])
def test_corrupt_weights_file_is_named(saved, damage):
    path = saved / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage is None else damage)
    with pytest.raises(
        CheckpointError,
        match=matching("{name} is not a readable safetensors file ({problem})", name="model.safetensors"),
    ):
        load_checkpoint(saved)


def test_broken_json_files_are_named(saved):
    (saved / "config.json").write_text("{not json")
    with pytest.raises(
        CheckpointError,
        match=matching("{origin} is not valid JSON (line {line}, column {column}: {problem})", origin="config.json"),
    ):
        load_checkpoint(saved)
    (saved / "config.json").write_text(json.dumps({"src_vocab_size": 31, "tgt_vocab_size": 31, "colour": "red"}))
    with pytest.raises(CheckpointError, match="config.json: " + matching(FIELDS, n=1)) as err:
        load_checkpoint(saved)
    assert "colour" not in str(err.value)  # a field name is the file's content: counted, never echoed


def test_vocabulary_size_mismatch_is_named(saved):
    tok = json.loads((saved / "tokenizer.json").read_text())
    tok["shared"]["tokens"].append("!")
    (saved / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(
        CheckpointError, match="tokenizer.json has 32 source tokens but config.json says source vocabulary 31"
    ):
        load_checkpoint(saved)


def test_missing_files_and_paths(saved, tmp_path):
    with pytest.raises(CheckpointError, match=matching("no checkpoint at {path}")):
        load_checkpoint(tmp_path / "nowhere")
    (saved / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match="tokenizer.json is missing"):
        load_checkpoint(saved)
    with pytest.raises(CheckpointError, match=matching(NO_FORMAT, name="config.json")):
        load_checkpoint(saved / "config.json")


def test_a_loaded_model_survives_its_files_being_overwritten(saved, tmp_path, monkeypatch):
    """With VIZ_MAP_WEIGHTS=0 (the app server's default, ui/serving/threads.start_server_once) the loaded model owns its
    weights: a truncated mapping would crash the server with SIGBUS."""
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", "0")
    model, _ = load_checkpoint(saved)
    before = outputs(model)
    (saved / "model.safetensors").write_bytes(b"")
    assert torch.equal(outputs(model), before)
    torch.save(
        ann_make_model(10, 11, N=2, d_model=8, d_ff=16, h=2, max_len=30).state_dict(), tmp_path / "a.safetensors.pt"
    )
    from safetensors.torch import save_file as save_st

    state = torch.load(tmp_path / "a.safetensors.pt", weights_only=True)
    save_st({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "a.safetensors"))
    imported, _ = load_checkpoint(tmp_path / "a.safetensors", n_heads=2)
    weight = imported.generator.weight.clone()
    (tmp_path / "a.safetensors").write_bytes(b"")
    assert torch.equal(imported.generator.weight, weight)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_a_skeleton_draws_nothing_at_random_and_leaves_other_models_initialised(positional):
    """skeleton() skips every reset_parameters (the random generator does not move), only inside itself."""
    import threading

    from model.checkpoints.checkpoint import skeleton

    config = TransformerConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=21, positional=positional)
    before = torch.get_rng_state()
    model = skeleton(config)
    assert torch.equal(torch.get_rng_state(), before)  # nothing drawn: no parameter was initialised
    assert {tuple(p.shape) for p in model.parameters()} == {tuple(p.shape) for p in build_model(config).parameters()}
    assert not torch.equal(torch.get_rng_state(), before)  # build_model after it initialises as ever
    seen = []
    thread = threading.Thread(target=lambda: seen.append(build_model(config, seed=3).generator.weight.std().item()))
    thread.start()
    thread.join()
    assert seen[0] > 0.01  # another thread's model is drawn at random (xavier), not left empty
    assert torch.equal(build_model(config, seed=3).generator.weight, build_model(config, seed=3).generator.weight)
