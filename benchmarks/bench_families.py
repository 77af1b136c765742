"""The Llama-like families at real shapes (random weights): does a published shape open, and what does it cost?

    python -m benchmarks.bench_families                  # a Gemma-3-1B-shaped folder (2.0 GB in bfloat16), opened
    python -m benchmarks.bench_families --no-baseline    # without transformers' from_pretrained beside it
    python -m benchmarks.bench_families --tokens 64      # the text's length for the capture

The folder is written here without building the model (safetensors shards of random bfloat16 tensors, their names and
shapes from transformers' Gemma3ForCausalLM on the meta device; config.json from Gemma3TextConfig; a small byte-level
tokenizer.json), cached under --folders (a temporary folder outside the repository). Then, each in a fresh child
process (so that each peak is its own): load_checkpoint and one capture of --tokens tokens (every map, the log-probs),
and, as the named baseline, transformers' from_pretrained (eager attention) and one forward with output_attentions.
Peak: the child's VmHWM after the imports were reset. The configs of Mistral-7B and Gemma-2-2B are checked against the
app's limits (config.json only): the rows say what the app answers.
The date and the load average (uptime) are printed at the start and the end: the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402

DEFAULT_FOLDERS = Path(tempfile.gettempdir()) / "transformer-viz-bench-families"
GEMMA3_1B = dict(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                 num_attention_heads=4, num_key_value_heads=1, head_dim=256, sliding_window=512,
                 max_position_embeddings=32768, query_pre_attn_scalar=256, bos_token_id=0, eos_token_id=1,
                 pad_token_id=2)  # fmt: skip
REFUSED = {  # family format, transformers config class, the published shape
    "mistral-7b": ("MistralConfig", dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8)),
    "gemma-2-2b": ("Gemma2Config", dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216,
                                        num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4,
                                        head_dim=256)),
}  # fmt: skip


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def write_gemma3(folder: Path) -> Path:
    """The Gemma-3-1B-shaped folder (kept when its config is unchanged)."""
    import torch
    import transformers
    from safetensors.torch import save_file

    from harness.byte_level import byte_level

    config = transformers.Gemma3TextConfig(**GEMMA3_1B)
    if (folder / "config.json").exists() and json.loads((folder / "config.json").read_text()).get(
        "hidden_size"
    ) == config.hidden_size:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    config.architectures = ["Gemma3ForCausalLM"]
    config.save_pretrained(str(folder))
    byte_level(folder, ["<bos>", "<eos>", "<pad>"], bos="<bos>")
    with torch.device("meta"):
        shapes = {k: tuple(v.shape) for k, v in transformers.Gemma3ForCausalLM(config).state_dict().items()}
    shapes.pop("lm_head.weight", None)  # tied
    g = torch.Generator().manual_seed(0)
    shards, current, size, index = [], {}, 0, {}
    for name, shape in shapes.items():
        current[name] = (torch.randn(shape, generator=g) * 0.02).to(torch.bfloat16)
        size += current[name].numel() * 2
        if size > 400e6:
            shards.append(current)
            current, size = {}, 0
    shards.append(current)
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / file), metadata={"format": "pt"})
        index.update(dict.fromkeys(shard, file))
        shard.clear()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}))
    return folder


def child(which: str, folder: str, tokens: int) -> dict:
    """Run in a fresh process: open the folder (ours or transformers'), one pass over `tokens` tokens, the peak."""
    import torch

    def reset_peak() -> None:
        Path("/proc/self/clear_refs").write_text("5")

    def peak_mb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    text = " ".join(["the cat sat on a mat and the dog ran"] * (tokens // 10 + 1))
    if which == "ours":
        from model import capture, load_checkpoint

        reset_peak()
        t0 = time.perf_counter()
        model, tok = load_checkpoint(folder)
        opened = time.perf_counter() - t0
        ids = tok.source.encode(text)[:tokens]
        t0 = time.perf_counter()
        cap = capture(model, tok, tok.source.detokenize(tok.source.decode(ids)))
        ran = time.perf_counter() - t0
        c = model.config
        kinds = f"{c.kinds.count('local')} local (window {c.sliding_window}) + {c.kinds.count('global')} global"
        return dict(open_s=opened, run_s=ran, peak_mb=peak_mb(), maps=list(cap.decoder_self.shape), kinds=kinds,
                    parameters=sum(p.numel() for p in model.parameters()))  # fmt: skip
    import transformers

    reset_peak()
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    opened = time.perf_counter() - t0
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(Path(folder) / "tokenizer.json"))
    ids = tok(text)["input_ids"][:tokens]
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    ran = time.perf_counter() - t0
    return dict(open_s=opened, run_s=ran, peak_mb=peak_mb(), maps=[len(out.attentions), *out.attentions[0].shape[1:]])


def in_child(which: str, folder: Path, tokens: int) -> dict:
    code = (
        f"import json, benchmarks.bench_families as b; print(json.dumps(b.child({which!r}, {str(folder)!r}, {tokens})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def refusals(root: Path) -> list[list[str]]:
    """What the app answers for the published configs of Mistral-7B and Gemma-2-2B (config.json alone)."""
    import transformers

    from model import load_checkpoint

    rows = []
    for name, (cls, fields) in REFUSED.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        getattr(transformers, cls)(**fields).save_pretrained(str(folder))
        try:
            load_checkpoint(folder)
            answer = "opened"
        except ValueError as err:
            answer = str(err).split(": ", 1)[-1]
        rows.append([name, answer])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folders", type=Path, default=DEFAULT_FOLDERS)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--no-baseline", action="store_true", help="skip transformers' from_pretrained")
    args = parser.parse_args()
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC · {uptime()}")
    folder = write_gemma3(args.folders / "gemma-3-1b")
    weights = sum(f.stat().st_size for f in folder.glob("*.safetensors")) / 1e6
    ours = in_child("ours", folder, args.tokens)
    theirs = None if args.no_baseline else in_child("transformers", folder, args.tokens)
    rows = [["load_checkpoint + capture", f"{ours['parameters'] / 1e6:.0f}M", f"{weights:.0f}",
             f"{ours['open_s'] * 1e3:.0f}", f"{ours['run_s'] * 1e3:.0f}", f"{ours['peak_mb']:.0f}", ours["kinds"],
             "x".join(map(str, ours["maps"])), uptime().rsplit(":", 1)[-1].split(",")[0].strip()]]  # fmt: skip
    if theirs is not None:
        rows.append(["from_pretrained + forward (eager)", "", f"{weights:.0f}", f"{theirs['open_s'] * 1e3:.0f}",
                     f"{theirs['run_s'] * 1e3:.0f}", f"{theirs['peak_mb']:.0f}", "",
                     "x".join(map(str, theirs["maps"])), uptime().rsplit(":", 1)[-1].split(",")[0].strip()])  # fmt: skip
        rows.append(["ratio (ours / transformers)", "", "", f"{ours['open_s'] / theirs['open_s']:.2f}x",
                     f"{ours['run_s'] / theirs['run_s']:.2f}x", f"{ours['peak_mb'] / theirs['peak_mb']:.2f}x",
                     "", "", ""])  # fmt: skip
    print(table(["Gemma-3-1B shape", "parameters", "weights MB (bf16)", "open ms", f"pass of {args.tokens} tokens ms",
                 "peak MB", "layers", "maps", "load avg"], rows))  # fmt: skip
    print()
    print(table(["published config", "the app's answer (config.json alone)"], refusals(args.folders)))
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC · {uptime()}")


if __name__ == "__main__":
    main()
