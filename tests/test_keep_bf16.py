"""A bfloat16 Hugging Face folder kept in bfloat16 ($VIZ_KEEP_BF16=1): loaded without a float32 copy, its forward run
in bfloat16, its maps and summaries computed in float32, close to transformers' float32 eager maps on the same
(bf16-rounded) weights. Tolerance: 0.02 on an attention weight (bfloat16 keeps 8 bits of mantissa: about 0.4 % on
each q and k, after a 2-layer residual stream); the float32 load of the same folder matches to 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import capture, load_checkpoint
from model.checkpoints.checkpoint import CheckpointError
from model.checkpoints.formats.hf_common import TOO_MANY_NUMBERS
from tests.hf_one_stack import build_qwen2

TEXT = "birds sang while the dog ran to the red house"
TOLERANCE = 2e-2


@pytest.fixture(scope="module")
def bf16_folder(tmp_path_factory):
    from safetensors.torch import load_file, save_file

    family = build_qwen2(tmp_path_factory.mktemp("bf16"))
    path = family.folder / "model.safetensors"
    save_file({k: v.to(torch.bfloat16) for k, v in load_file(str(path)).items()}, str(path), {"format": "pt"})
    return family


def reference_maps(family, ids):
    """transformers' eager maps (L, H, T, T) of the float32 model on the bf16-rounded weights."""
    import transformers

    hf = transformers.Qwen2ForCausalLM.from_pretrained(str(family.folder), attn_implementation="eager",
                                                       dtype=torch.float32).eval()  # fmt: skip
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([ids]), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).numpy()


@pytest.mark.parametrize("mapped", ["1", "0"])  # the library's memory map, the server's private read
def test_kept_in_bf16_with_float32_maps_close_to_transformers(bf16_folder, monkeypatch, mapped):
    monkeypatch.setenv("VIZ_KEEP_BF16", "1")
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", mapped)
    model, tok = load_checkpoint(bf16_folder.folder)
    params = list(model.parameters())
    assert {p.dtype for p in params} == {torch.bfloat16}  # not widened: 2 bytes a number
    stored = bf16_folder.folder.joinpath("model.safetensors").stat().st_size
    assert sum(p.numel() * p.element_size() for p in params) <= stored  # no float32 copy anywhere in the model
    cap = capture(model, tok, TEXT, lazy=True)
    ref = reference_maps(bf16_folder, list(cap.target_ids))
    L, H = ref.shape[:2]
    for layer in range(L):
        for head in range(H):
            ours = cap.map("decoder_self", layer, head)
            assert ours.dtype == np.float32
            np.testing.assert_allclose(ours, ref[layer, head], atol=TOLERANCE)
    summary = cap.summary("decoder_self")
    assert summary["entropy"].dtype == np.float32
    np.testing.assert_allclose(summary["first_token"], ref[..., :, 0].mean(-1), atol=TOLERANCE)
    entropy = -(ref * np.log(np.where(ref > 0, ref, 1))).sum(-1).mean(-1)
    np.testing.assert_allclose(summary["entropy"], entropy, atol=5 * TOLERANCE)


def test_without_the_switch_the_same_folder_is_widened_and_exact(bf16_folder, monkeypatch):
    monkeypatch.delenv("VIZ_KEEP_BF16", raising=False)
    model, tok = load_checkpoint(bf16_folder.folder)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    cap = capture(model, tok, TEXT, lazy=True)
    np.testing.assert_allclose(cap.map("decoder_self", 1, 2), reference_maps(bf16_folder, list(cap.target_ids))[1, 2],
                               atol=1e-5)  # fmt: skip


def test_the_memory_limit_counts_the_kept_type(bf16_folder, monkeypatch):
    """A folder whose numbers fit the weights' memory in bfloat16 but not in float32: kept, it opens; widened, it
    is refused before anything is read, with the limit in float32 numbers."""
    from model import env
    from model.network.config import parameter_count

    model, _ = load_checkpoint(bf16_folder.folder)
    n = parameter_count(model.config)
    room = 3 * n  # bytes for weights: 1.5 n numbers of bfloat16, 0.75 n of float32
    monkeypatch.setattr(env, "machine_memory", lambda: 2 * room)  # half of it for weights
    monkeypatch.setenv("VIZ_KEEP_BF16", "1")
    assert load_checkpoint(bf16_folder.folder)[0] is not None
    monkeypatch.setenv("VIZ_KEEP_BF16", "0")
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(bf16_folder.folder)
    problem = refused.value.args[0].values["problem"]
    assert problem.template == TOO_MANY_NUMBERS and problem.values["limit"] == f"{room // 4 / 1e6:,.0f}"
