"""A local MarianMT folder: weights and config.json written with Hugging Face's names, real sentencepiece
tokenizer files trained here. Compared with an independent reference written from modeling_marian's
definition and, where transformers is installed, with MarianMTModel and MarianTokenizer themselves."""

import io
import json
import random
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from harness.reference.marian import marian_positions, marian_reference
from model import CheckpointError, capture, greedy_decode, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from model.network.positional import sinusoidal_encoding
from tests.hf_families import edit_json
from tests.i18n_helpers import matching, msgid, msgid_starting, rendered
from tests.import_helpers import assert_close, assert_maps_equal, our_run

NOT_SINUSOIDAL = msgid_starting("{where}: {key} is not the sinusoidal positional encoding this format defines")
LAYOUT = msgid("; it is the {other} layout, which this format's code does not use")
SAYS_HEADS = msgid("{file} says {n} heads, but n_heads={asked} was asked for")
TIED = msgid("{where}: {key} differs from {what}, although config.json ties them")
OWN_TOKENIZER = msgid("{where} carries its own tokenizer; vocabulary files are only for state_dict formats")
HALF = msgid("Stored in half precision ({precision}); the weights were cast to float32.")

spm = pytest.importorskip("sentencepiece")
pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")  # MarianTokenizer's own

D, HEADS, FFN, LAYERS_ENC, LAYERS_DEC, MAX_POS = 16, 4, 32, 2, 3, 64
SRC_WORDS = "the cat sat on a mat and the dog ran to the red house while birds sang".split()
TGT_WORDS = "le chat est sur un tapis et le chien court vers la maison rouge pendant que".split()


def train_spm(words: list[str], seed: int) -> bytes:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))) for _ in range(200)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=buf,
        vocab_size=40,
        model_type="unigram",
        character_coverage=1.0,
        bos_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return buf.getvalue()


def hf_state(vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under MarianMTModel's names (tied lm_head and embed_tokens left out, as save_pretrained does)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.3):
        return torch.randn(*shape, generator=g) * scale

    state = {"model.shared.weight": rnd(vocab, D, scale=0.5), "final_logits_bias": rnd(1, vocab)}

    def attn(prefix):
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            state[f"{prefix}.{p}.weight"], state[f"{prefix}.{p}.bias"] = rnd(D, D), rnd(D, scale=0.1)

    def norm(prefix):
        state[f"{prefix}.weight"], state[f"{prefix}.bias"] = 1 + rnd(D, scale=0.2), rnd(D, scale=0.1)

    def ffn(prefix):
        state[f"{prefix}.fc1.weight"], state[f"{prefix}.fc1.bias"] = rnd(FFN, D), rnd(FFN, scale=0.1)
        state[f"{prefix}.fc2.weight"], state[f"{prefix}.fc2.bias"] = rnd(D, FFN), rnd(D, scale=0.1)

    for i in range(LAYERS_ENC):
        p = f"model.encoder.layers.{i}"
        attn(f"{p}.self_attn"), norm(f"{p}.self_attn_layer_norm"), ffn(p), norm(f"{p}.final_layer_norm")
    for i in range(LAYERS_DEC):
        p = f"model.decoder.layers.{i}"
        attn(f"{p}.self_attn"), norm(f"{p}.self_attn_layer_norm"), attn(f"{p}.encoder_attn")
        norm(f"{p}.encoder_attn_layer_norm"), ffn(p), norm(f"{p}.final_layer_norm")
    return state


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("opus-mt-tiny")
    (folder / "source.spm").write_bytes(train_spm(SRC_WORDS, 0))
    (folder / "target.spm").write_bytes(train_spm(TGT_WORDS, 1))
    pieces = []
    for name in ("source.spm", "target.spm"):
        sp = spm.SentencePieceProcessor(model_file=str(folder / name))
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(dict.fromkeys(pieces))}}
    vocab["<pad>"] = len(vocab)  # Marian: pad is the last id, and the decoder starts from it
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "MarianTokenizer", "separate_vocabs": False})
    )
    V = len(vocab)
    config = {
        "model_type": "marian",
        "architectures": ["MarianMTModel"],
        "vocab_size": V,
        "decoder_vocab_size": V,
        "d_model": D,
        "encoder_layers": LAYERS_ENC,
        "decoder_layers": LAYERS_DEC,
        "encoder_attention_heads": HEADS,
        "decoder_attention_heads": HEADS,
        "encoder_ffn_dim": FFN,
        "decoder_ffn_dim": FFN,
        "max_position_embeddings": MAX_POS,
        "activation_function": "swish",
        "scale_embedding": True,
        "pad_token_id": V - 1,
        "decoder_start_token_id": V - 1,
        "eos_token_id": 0,
        "forced_eos_token_id": 0,
        "share_encoder_decoder_embeddings": True,
        "tie_word_embeddings": True,
        "dropout": 0.1,
        # fields old opus-mt configs carry, at the values this model follows
        "normalize_before": False,
        "normalize_embedding": False,
        "static_position_embeddings": True,
        "add_bias_logits": False,
    }
    (folder / "config.json").write_text(json.dumps(config))
    save_file(hf_state(V), str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="module")
def loaded(marian_dir):
    return load_checkpoint(marian_dir)


def batch(V: int):
    """Sources with padding in row 1; decoder inputs starting from <pad> (the decoder start token)."""
    pad = V - 1
    g = torch.Generator().manual_seed(5)
    src = torch.randint(2, V - 1, (2, 8), generator=g)
    src[:, -1] = 0
    src[1, 5:] = pad
    tgt = torch.randint(2, V - 1, (2, 6), generator=g)
    tgt[:, 0] = pad
    return src, tgt


@torch.no_grad()
def test_logits_and_maps_match_the_reference_definition(marian_dir, loaded):
    model, tok = loaded
    c = model.config
    assert (c.norm_first, c.has_final_norm, c.pe_layout, c.activation, c.share_embeddings, c.tie_generator) == (
        False,
        False,
        "half",
        "silu",
        True,
        True,
    )
    assert model.generator.weight is model.tgt_embed.weight is model.src_embed.weight
    cfg = json.loads((marian_dir / "config.json").read_text())
    V = cfg["vocab_size"]
    assert (c.pad_id, c.bos_id, c.eos_id) == (V - 1, V - 1, 0)
    src, tgt = batch(V)
    ref_logits, ref_maps = marian_reference(
        load_file(str(marian_dir / "model.safetensors")),
        cfg,
        src,
        tgt,
        src != V - 1,
        torch.ones_like(tgt, dtype=torch.bool),
    )
    logits, maps = our_run(model, src, tgt)
    assert_close(logits, ref_logits)
    assert_maps_equal(maps, ref_maps)
    assert maps["decoder_self"][0][:, :, 0, 0].min() == 1  # the start token (spelled <pad>) is attended, not masked
    assert_close(model.src_pe.table, marian_positions(MAX_POS, D))


@torch.no_grad()
def test_matches_transformers_marian_mt_model(marian_dir, loaded):
    transformers = pytest.importorskip("transformers")
    hf = transformers.MarianMTModel.from_pretrained(str(marian_dir), attn_implementation="eager").eval()
    model, _ = loaded
    V = hf.config.vocab_size
    src, tgt = batch(V)
    out = hf(input_ids=src, attention_mask=(src != V - 1).long(), decoder_input_ids=tgt, output_attentions=True)
    logits, maps = our_run(model, src, tgt)
    assert_close(logits, out.logits)
    assert_maps_equal(
        maps,
        {"encoder_self": out.encoder_attentions, "decoder_self": out.decoder_attentions, "cross": out.cross_attentions},
    )


def test_tokenizer_matches_marian_tokenizer(marian_dir, loaded):
    transformers = pytest.importorskip("transformers")
    theirs = transformers.MarianTokenizer.from_pretrained(str(marian_dir))
    _, tok = loaded
    for text in ("the cat sat on a mat", "birds sang while the dog ran", "zebra xylophone"):
        assert tok.source.encode(text) + [tok.source.eos_id] == theirs(text)["input_ids"]
    for text in ("le chat est sur un tapis", "la maison rouge"):
        assert tok.target.encode(text) + [tok.target.eos_id] == theirs(text_target=text)["input_ids"]


@torch.no_grad()
def test_capture_and_decoding_use_the_folders_tokenizer(marian_dir, loaded):
    model, tok = loaded
    cap = capture(model, tok, "the cat sat on the mat", "le chat")
    assert cap.source_tokens[-1] == "</s>" and cap.source_tokens[0].startswith("▁")
    assert cap.target_tokens[0] == "<pad>" and "".join(cap.target_tokens[1:]).replace("▁", " ").strip() == "le chat"
    cfg = json.loads((marian_dir / "config.json").read_text())
    _, ref_maps = marian_reference(
        load_file(str(marian_dir / "model.safetensors")),
        cfg,
        torch.tensor([cap.source_ids.tolist()]),
        torch.tensor([cap.target_ids.tolist()]),
        torch.ones(1, len(cap.source_ids), dtype=torch.bool),
        torch.ones(1, len(cap.target_ids), dtype=torch.bool),
    )
    assert_close(torch.from_numpy(cap.cross), torch.stack([m[0] for m in ref_maps["cross"]]))
    trace = greedy_decode(model, tok, "the dog ran", max_len=4)
    assert len(trace.steps) >= 1 and isinstance(trace.text, str)


def test_inspect_knows_heads_and_tokenizer(marian_dir):
    info = inspect_checkpoint(marian_dir)
    assert (info.format, info.needs_n_heads, info.takes_vocabulary, info.n_heads, info.d_model) == (
        "marian",
        False,
        False,
        HEADS,
        D,
    )


def copy_folder(src, dst, **config_changes):
    shutil.copytree(src, dst)
    edit_json(dst / "config.json", **config_changes)
    return dst


@pytest.mark.parametrize(
    "change, message",
    [
        ({"normalize_before": True}, r"normalize_before is set \(pre-LN blocks\)"),
        ({"activation_function": "gelu_new"}, r"activation_function is not one of relu, gelu, swish, silu"),
        ({"decoder_attention_heads": 2}, r"encoder_attention_heads differs from decoder_attention_heads"),
        ({"normalize_embedding": True}, r"normalize_embedding is set \(a LayerNorm on the embeddings\)"),
        (
            {"model_type": "xlnet"},
            r"a Hugging Face model of another kind \(not named here\)",
        ),  # its list: test_import_detect
        ({"pad_token_id": 5}, r"the source vocabulary has <pad> at id \d+, but config.json pad_token_id is 5"),
    ],
)
def test_configs_it_cannot_follow_are_refused_by_field(marian_dir, tmp_path, change, message):
    folder = copy_folder(marian_dir, tmp_path / "m", **change)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(folder)


def test_stored_positions_are_checked_for_the_half_layout(marian_dir, tmp_path):
    folder = copy_folder(marian_dir, tmp_path / "m")
    state = load_file(str(folder / "model.safetensors"))
    state["model.encoder.embed_positions.weight"] = marian_positions(MAX_POS, D)
    state["model.decoder.embed_positions.weight"] = marian_positions(MAX_POS, D)
    save_file(state, str(folder / "model.safetensors"))
    model, _ = load_checkpoint(folder)  # the half layout is accepted
    state["model.decoder.embed_positions.weight"] = sinusoidal_encoding(MAX_POS, D, layout="interleaved")
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(
        CheckpointError,
        match=matching(
            NOT_SINUSOIDAL, key="model.decoder.embed_positions.weight", hint=rendered(LAYOUT, other="interleaved")
        ),
    ):
        load_checkpoint(folder)


def test_pytorch_model_bin_is_read_weights_only_and_heads_are_not_overridden(marian_dir, tmp_path):
    folder = copy_folder(marian_dir, tmp_path / "m")
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    state["lm_head.weight"] = state["model.shared.weight"].clone()  # older files store the tied copy too
    torch.save(state, folder / "pytorch_model.bin")
    model, _ = load_checkpoint(folder)
    with pytest.raises(CheckpointError, match=matching(SAYS_HEADS, file="config.json", n=4, asked=2)):
        load_checkpoint(folder, n_heads=2)
    state["lm_head.weight"] = state["lm_head.weight"] + 1
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=matching(TIED, key="lm_head.weight", what="the decoder embeddings")):
        load_checkpoint(folder)
    with pytest.raises(CheckpointError, match=matching(OWN_TOKENIZER)):
        load_checkpoint(marian_dir, vocab=["a", "b"])


@torch.no_grad()
def test_separate_encoder_and_decoder_embeddings_match_transformers(marian_dir, tmp_path):
    """share_encoder_decoder_embeddings=False: two tables, lm_head tied to the decoder's."""
    transformers = pytest.importorskip("transformers")
    folder = copy_folder(marian_dir, tmp_path / "m", share_encoder_decoder_embeddings=False)
    state = load_file(str(folder / "model.safetensors"))
    shared = state.pop("model.shared.weight")
    state["model.encoder.embed_tokens.weight"] = shared
    state["model.decoder.embed_tokens.weight"] = shared.flip(0).contiguous()
    save_file(state, str(folder / "model.safetensors"))
    model, _ = load_checkpoint(folder)
    assert not model.config.share_embeddings and model.generator.weight is model.tgt_embed.weight
    hf = transformers.MarianMTModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    V = hf.config.vocab_size
    src, tgt = batch(V)
    out = hf(input_ids=src, attention_mask=(src != V - 1).long(), decoder_input_ids=tgt)
    assert_close(our_run(model, src, tgt)[0], out.logits)


@pytest.mark.parametrize(
    "dtype, weights_file", [(torch.float16, "pytorch_model.bin"), (torch.bfloat16, "model.safetensors")]
)
@torch.no_grad()
def test_half_precision_weights_load_in_float32(marian_dir, loaded, tmp_path, dtype, weights_file):
    """model.half().save_pretrained(...): the reference definition on the rounded weights gives the same logits."""
    folder = copy_folder(marian_dir, tmp_path / "m")
    state = {k: v.to(dtype) for k, v in load_file(str(folder / "model.safetensors")).items()}
    (folder / "model.safetensors").unlink()

    def write(state):
        if weights_file == "pytorch_model.bin":
            torch.save(state, folder / weights_file)
        else:
            save_file(state, str(folder / weights_file))

    write(state)
    name = str(dtype).removeprefix("torch.")
    info = inspect_checkpoint(folder)
    assert info.precision == name and rendered(HALF, precision=name) in info.notes
    model, _ = load_checkpoint(folder)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    cfg = json.loads((folder / "config.json").read_text())
    V = cfg["vocab_size"]
    src, tgt = batch(V)
    rounded = {k: v.float() for k, v in state.items()}
    ref_logits, _ = marian_reference(rounded, cfg, src, tgt, src != V - 1, torch.ones_like(tgt, dtype=torch.bool))
    logits = our_run(model, src, tgt)[0]
    assert_close(logits, ref_logits, tol=1e-4)
    drift = (logits - our_run(loaded[0], src, tgt)[0]).abs().max().item()
    assert 0 < drift < {torch.float16: 5e-2, torch.bfloat16: 4e-1}[dtype]
    table = marian_positions(MAX_POS, D).to(dtype)  # a stored, rounded table passes the check and is the one used
    write({**state, "model.encoder.embed_positions.weight": table})
    assert torch.equal(load_checkpoint(folder)[0].src_pe.table, table.float())
