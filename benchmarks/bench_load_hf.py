"""Opening Hugging Face folders of the T5 and BART families against a bare read of their weights file (issue 25).

    python -m benchmarks.bench_load_hf           # t5-base (222M parameters, 892 MB) and bart-base (139M) shapes
    python -m benchmarks.bench_load_hf --quick   # t5-small and a 2+2-layer BART, for a smoke run

Target: load_checkpoint(folder) costs at most 1.5x reading the folder's model.safetensors into memory
(safetensors.torch.load of the file's bytes: load_file only maps the file). The folders are written here
with the families' own tensor names and shapes (random weights; no transformers needed) and read once
untimed, so both sides read from the page cache; the two calls alternate and each row prints the median
of the repeats with the load average. Both run with the server's torch threads, as the app loads a model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_load import TARGET, side_by_side  # noqa: E402
from benchmarks.common import table  # noqa: E402
from model import load_checkpoint  # noqa: E402


def t5_folder(folder: Path, d: int, heads: int, d_ff: int, layers: int, vocab: int = 32128) -> int:
    """A T5 v1.0 folder (tied lm_head, ReLU, relative bias in block 0) of this shape; its parameter count."""
    g = torch.Generator().manual_seed(0)
    state: dict[str, torch.Tensor] = {"shared.weight": torch.randn(vocab, d, generator=g)}
    inner = heads * 64
    for stack, parts in (("encoder", ("SelfAttention",)), ("decoder", ("SelfAttention", "EncDecAttention"))):
        state[f"{stack}.final_layer_norm.weight"] = torch.ones(d)
        state[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = torch.randn(
            32, heads, generator=g
        )
        for i in range(layers):
            for j, part in enumerate(parts):
                for name in ("q", "k", "v"):
                    state[f"{stack}.block.{i}.layer.{j}.{part}.{name}.weight"] = (
                        torch.randn(inner, d, generator=g) * 0.05
                    )
                state[f"{stack}.block.{i}.layer.{j}.{part}.o.weight"] = torch.randn(d, inner, generator=g) * 0.05
                state[f"{stack}.block.{i}.layer.{j}.layer_norm.weight"] = torch.ones(d)
            ff = len(parts)
            state[f"{stack}.block.{i}.layer.{ff}.DenseReluDense.wi.weight"] = torch.randn(d_ff, d, generator=g) * 0.05
            state[f"{stack}.block.{i}.layer.{ff}.DenseReluDense.wo.weight"] = torch.randn(d, d_ff, generator=g) * 0.05
            state[f"{stack}.block.{i}.layer.{ff}.layer_norm.weight"] = torch.ones(d)
    folder.mkdir()
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = dict(model_type="t5", d_model=d, d_kv=64, num_heads=heads, d_ff=d_ff, num_layers=layers, vocab_size=vocab)
    (folder / "config.json").write_text(json.dumps(config))
    return sum(t.numel() for t in state.values())


def bart_folder(
    folder: Path, d: int, heads: int, d_ff: int, layers: int, vocab: int = 50265, positions: int = 1024
) -> int:
    """A BART folder (post-LN, learned positions offset by 2, embedding norms, final_logits_bias); its parameter count."""
    g = torch.Generator().manual_seed(0)
    state: dict[str, torch.Tensor] = {
        "model.shared.weight": torch.randn(vocab, d, generator=g),
        "final_logits_bias": torch.zeros(1, vocab),
    }

    def linear(prefix: str, rows: int, cols: int) -> None:
        state[f"{prefix}.weight"] = torch.randn(rows, cols, generator=g) * 0.05
        state[f"{prefix}.bias"] = torch.zeros(rows)

    def norm(prefix: str) -> None:
        state[f"{prefix}.weight"], state[f"{prefix}.bias"] = torch.ones(d), torch.zeros(d)

    for stack in ("encoder", "decoder"):
        state[f"model.{stack}.embed_positions.weight"] = torch.randn(positions + 2, d, generator=g) * 0.02
        norm(f"model.{stack}.layernorm_embedding")
        for i in range(layers):
            p = f"model.{stack}.layers.{i}"
            for attn in ("self_attn", "encoder_attn") if stack == "decoder" else ("self_attn",):
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    linear(f"{p}.{attn}.{proj}", d, d)
                norm(f"{p}.{attn}_layer_norm")
            linear(f"{p}.fc1", d_ff, d)
            linear(f"{p}.fc2", d, d_ff)
            norm(f"{p}.final_layer_norm")
    folder.mkdir()
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = dict(
        model_type="bart", d_model=d, encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff, encoder_layers=layers, decoder_layers=layers,
        vocab_size=vocab, max_position_embeddings=positions,
    )  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return sum(t.numel() for t in state.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from ui.threads import set_server_threads

    threads = set_server_threads()
    shapes = (
        [("t5-small shape", t5_folder, (512, 8, 2048, 6)), ("bart, 2+2 layers", bart_folder, (768, 12, 3072, 2))]
        if args.quick
        else [("t5-base shape", t5_folder, (768, 12, 3072, 12)), ("bart-base shape", bart_folder, (768, 12, 3072, 6))]
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-load-hf-") as tmp:
        for label, build, shape in shapes:
            folder = Path(tmp) / label.replace(" ", "-").replace(",", "")
            n = build(folder, *shape)
            weights = folder / "model.safetensors"

            def baseline(path=weights):
                return load_safetensors_bytes(path.read_bytes())

            def ours(path=folder):
                return load_checkpoint(path)

            b, o, b_cpu, o_cpu, load = side_by_side(baseline, ours, args.repeats)
            ratio = o / b
            rows.append(
                [
                    label,
                    f"{n / 1e6:.0f}M",
                    f"{weights.stat().st_size / 1e6:.0f} MB",
                    f"{b * 1000:.0f}",
                    f"{o * 1000:.0f}",
                    f"{ratio:.2f}x",
                    "ok" if ratio <= TARGET else "OVER",
                    f"{b_cpu * 1000:.0f} / {o_cpu * 1000:.0f}",
                    f"{o_cpu / b_cpu:.2f}x",
                    f"{load:.1f}",
                ]  # fmt: skip
            )
            (folder / "model.safetensors").unlink()
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {threads} torch thread(s); median of {args.repeats}, "
        f"calls alternated; target: load <= {TARGET}x reading model.safetensors into memory"
    )
    headers = ["folder", "parameters", "size", "read ms", "load_checkpoint ms", "ratio", "target"]
    print(table([*headers, "CPU ms (read / ours)", "CPU ratio", "load avg"], rows))


if __name__ == "__main__":
    main()
