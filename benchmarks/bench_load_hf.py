"""Opening Hugging Face folders of every family against transformers' own from_pretrained (issues 25 and 32).

    python -m benchmarks.bench_load_hf                 # realistic shapes of every family (about 4.5 GB of folders)
    python -m benchmarks.bench_load_hf --quick         # small shapes of every family, for a smoke run
    python -m benchmarks.bench_load_hf --only gpt2 t5  # some families
    python -m benchmarks.bench_load_hf --large         # adds an mBART-large-50-shaped folder (611M, 2.4 GB)

Per family, one folder of random weights built here with transformers' own classes and save_pretrained (cached under
--folders, a temporary folder outside the repository, and rebuilt when its shape changes), then:
  time  load_checkpoint(folder) against transformers' from_pretrained(folder, eager attention), side by side in this
        process: one untimed call of each, then the calls alternated, the median of --repeats (target: <= 1.0x)
  peak  how far the resident memory of a fresh child process rises while it loads the folder (VmHWM, reset after
        the imports and before each load), our loader and from_pretrained each in a child of its own, the median of
        --repeats loads there, against the bytes of the weights file (target: <= 1.2x)
  --forward  instead: the peak of a fresh child process after load_checkpoint and the model's first forward (8 tokens),
        which reads every mapped weight's pages: from its level before the load, and the whole process's (imports
        included), each against the weights file
The date and the load average (uptime) are printed at the start and the end, and each row carries the load average
when it was measured: the machine this ran on is shared.

What the two sides do: transformers 5 maps the weights file and adopts views of the mapping (a weight's page is read
when the forward first touches it), and so does load_checkpoint by default ("ours"). The "private" columns load with
VIZ_MAP_WEIGHTS=0, the app server's default (model/checkpoints/safetensors_read.keeps_mapping): the weights read into
the process's own memory once, so that a file overwritten or truncated later can neither change nor crash a server
and its room (tests/test_checkpoint.py, tests/test_safetensors_read.py). "read ms" times that read alone (the file's
bytes into fresh memory): the floor of a loader that keeps this property.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from model.checkpoints.safetensors_read import KEEP_MAPPED  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FOLDERS = Path(tempfile.gettempdir()) / "transformer-viz-bench-folders"

# family -> (label, transformers model class, config class, config fields): the published models' shapes
SHAPES: dict[str, tuple[str, str, str, dict]] = {
    "gpt2": ("gpt2-small", "GPT2LMHeadModel", "GPT2Config",
             dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257)),
    "llama": ("llama, GQA 12/4 heads", "LlamaForCausalLM", "LlamaConfig",
              dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
                   num_key_value_heads=4, vocab_size=32000)),
    "qwen2": ("qwen2-0.5b", "Qwen2ForCausalLM", "Qwen2Config",
              dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                   num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True)),
    "bert": ("bert-base (masked LM)", "BertForMaskedLM", "BertConfig", dict()),
    "t5": ("t5-base", "T5ForConditionalGeneration", "T5Config",
           dict(d_model=768, d_ff=3072, num_layers=12, num_heads=12, d_kv=64)),
    "bart": ("bart-base", "BartForConditionalGeneration", "BartConfig",
             dict(d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                  decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072)),
    "mbart": ("mbart-large-50", "MBartForConditionalGeneration", "MBartConfig",
              dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                   decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=250054,
                   max_position_embeddings=1024, scale_embedding=True)),
    "marian": ("opus-mt", "MarianMTModel", "MarianConfig",
               dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                    decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, vocab_size=58101,
                    max_position_embeddings=512, decoder_start_token_id=58100, pad_token_id=58100, eos_token_id=0)),
}  # fmt: skip
# --quick: the same families, two layers and small widths
QUICK: dict[str, dict] = {
    "gpt2": dict(n_embd=128, n_layer=2, n_head=4, n_positions=256, vocab_size=5000),
    "llama": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=5000),
    "qwen2": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=5000, tie_word_embeddings=True),
    "bert": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, vocab_size=5000),
    "t5": dict(d_model=128, d_ff=256, num_layers=2, num_heads=4, d_kv=32, vocab_size=5000),
    "bart": dict(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=5000),
    "mbart": dict(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=5000,
                  scale_embedding=True),
    "marian": dict(d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, vocab_size=5000,
                   max_position_embeddings=256, decoder_start_token_id=4999, pad_token_id=4999, eos_token_id=0),
}  # fmt: skip
LARGE = ("mbart",)  # left out unless --large (or --only names it)
TOKENIZED = ("gpt2", "qwen2")  # folders given a small byte-level tokenizer.json (the capture benchmark types text)


def folder_for(family: str, quick: bool, root: Path) -> Path:
    """The cached folder of this family's shape (built with transformers when absent or of another shape)."""
    label, model_class, config_class, fields = SHAPES[family]
    fields = QUICK[family] if quick else fields
    folder = root / (f"{family}-quick" if quick else family)
    marker = folder / "bench-shape.json"
    record = json.dumps({"class": model_class, "fields": fields}, sort_keys=True)
    if marker.is_file() and marker.read_text() == record and (folder / "model.safetensors").is_file():
        return folder
    import shutil

    import torch
    import transformers

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**fields))
    model.save_pretrained(str(folder))
    del model
    if family in TOKENIZED:
        from harness.byte_level import byte_level

        byte_level(folder, ["<|endoftext|>"])  # 300 tokens: ids beyond them are typed as ids
    marker.write_text(record)
    return folder


# Folders written without transformers, with the families' own tensor names (benchmarks/bench_pages.py --t5-base)
def t5_folder(folder: Path, d: int, heads: int, d_ff: int, layers: int, vocab: int = 32128) -> int:
    """A T5 v1.0 folder (tied lm_head, ReLU, relative bias in block 0) of this shape; its parameter count."""
    import torch
    from safetensors.torch import save_file

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
    import torch
    from safetensors.torch import save_file

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


def hf_class(folder: Path):
    import transformers

    return getattr(transformers, json.loads((folder / "config.json").read_text())["architectures"][0])


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


_CHILD = """import gc, sys; sys.path.insert(0, {root!r})
import torch, model.checkpoints.loading
{setup}
def status(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))
for _ in range({repeats}):
    gc.collect()
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS
    before = status("VmRSS:")
    kept = {code}
    print((status("VmHWM:") - before) * 1024)
    del kept
"""


_FORWARD_CHILD = """import sys; sys.path.insert(0, {root!r})
import torch
from model import load_checkpoint
def status(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))
before = status("VmRSS:")
model, _tok = load_checkpoint({folder!r})
loaded = status("VmHWM:")
ids = torch.arange(5, 13).unsqueeze(0)  # 8 tokens inside every vocabulary
with torch.no_grad():  # the one forward of the model's shape
    if model.config.has_encoder:
        memory, mask = model.encode(ids)
        if model.config.has_decoder:
            model.decode(ids, memory, mask)
    else:
        model.decode(ids)
print((loaded - before) * 1024, (status("VmHWM:") - before) * 1024, status("VmHWM:") * 1024)
"""


def forward_peaks(folder: Path) -> tuple[float, float, float]:
    """(peak while loading, peak after the first forward, both from the level before the load; the whole process's
    peak, imports included), bytes, in a fresh child process."""
    script = _FORWARD_CHILD.format(root=str(ROOT), folder=str(folder))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loading, forward, process = (float(x) for x in run.stdout.split()[-3:])
    return loading, forward, process


FORWARD_HEADERS = ["family", "shape", "weights MB", "peak while loading / weights", "peak after the first forward / "
                   "weights", "process peak MB", "process peak / weights", "load avg"]  # fmt: skip


def measure_forward(family: str, folder: Path, repeats: int) -> list[str]:
    """One row of the --forward table: the median of `repeats` fresh children."""
    size = (folder / "model.safetensors").stat().st_size
    runs = [forward_peaks(folder) for _ in range(repeats)]
    loading, forward, process = (statistics.median(r[i] for r in runs) for i in range(3))
    return [family, SHAPES[family][0] if "quick" not in folder.name else "small (--quick)", f"{size / 2**20:.0f}",
            f"{loading / size:.2f}x", f"{forward / size:.2f}x", f"{process / 2**20:.0f}", f"{process / size:.2f}x",
            f"{os.getloadavg()[0]:.1f}"]  # fmt: skip


def peak_bytes(code: str, repeats: int, setup: str = "") -> float:
    """How far the resident memory of a fresh child process rose while it ran `code` (bytes; the median of `repeats`
    runs in that child, each from its own level): the child imports what it needs (and runs `setup`: transformers
    imports a model class on first use), resets its peak (Linux: /proc/self/clear_refs), runs `code`, reads VmHWM."""
    script = _CHILD.format(root=str(ROOT), code=code, setup=setup, repeats=repeats)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return statistics.median(float(line) for line in run.stdout.split()[-repeats:])


def read_bytes(path: Path):
    """The file's bytes read into fresh memory: what keeping the weights in the process's own memory costs at least."""
    import torch

    data = torch.empty(path.stat().st_size, dtype=torch.uint8)
    with open(path, "rb", buffering=0) as fh:
        fh.readinto(memoryview(data.numpy()))
    return data


def alternate(calls: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each call, one untimed call of each first, then the calls alternated `repeats` times."""
    for fn in calls.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def private(fn):
    """fn with VIZ_MAP_WEIGHTS=0 (the app server's default): the weights read into the process's own memory once."""

    def call():
        os.environ[KEEP_MAPPED] = "0"
        try:
            return fn()
        finally:
            del os.environ[KEEP_MAPPED]

    return call


def measure(family: str, folder: Path, repeats: int) -> list[str]:
    from model import load_checkpoint

    os.environ.pop(KEEP_MAPPED, None)  # "ours": the library's default, the file's mapping kept as transformers does
    cls = hf_class(folder)
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    t = alternate(
        {
            "theirs": lambda: cls.from_pretrained(str(folder), attn_implementation="eager"),
            "ours": lambda: load_checkpoint(folder),
            "private": private(lambda: load_checkpoint(folder)),
            "read": lambda: read_bytes(weights),
        },
        repeats,
    )
    ours_code = f"model.checkpoints.loading.load_checkpoint({str(folder)!r})"
    theirs_code = f"cls.from_pretrained({str(folder)!r}, attn_implementation='eager')"
    setup = f"import transformers; cls = transformers.{cls.__name__}"
    peaks = {
        "ours": peak_bytes(ours_code, repeats),
        "private": peak_bytes(ours_code, repeats, f"import os; os.environ[{KEEP_MAPPED!r}] = '0'"),
        "theirs": peak_bytes(theirs_code, repeats, setup),
    }
    model, _ = load_checkpoint(folder)
    n = sum(p.numel() for p in model.parameters())
    mb = 2**20
    return [
        family,
        SHAPES[family][0] if "quick" not in folder.name else "small (--quick)",
        f"{n / 1e6:.0f}M",
        f"{size / mb:.0f}",
        f"{t['ours'] * 1000:.0f}",
        f"{t['theirs'] * 1000:.0f}",
        f"{t['ours'] / t['theirs']:.2f}x",
        f"{peaks['ours'] / mb:.0f}",
        f"{peaks['ours'] / size:.2f}x",
        f"{peaks['theirs'] / mb:.0f}",
        f"{t['private'] * 1000:.0f}",
        f"{t['private'] / t['theirs']:.2f}x",
        f"{t['read'] * 1000:.0f}",
        f"{peaks['private'] / size:.2f}x",
        f"{os.getloadavg()[0]:.1f}",
    ]


HEADERS = ["family", "shape", "parameters", "weights MB", "ours ms", "from_pretrained ms", "ratio", "our peak MB",
           "our peak / weights", "transformers' peak MB", "private ms", "private ratio", "read ms",
           "private peak / weights", "load avg"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small shapes of every family")
    parser.add_argument("--large", action="store_true", help="also the mBART-large-50 shape (2.4 GB)")
    parser.add_argument("--only", nargs="*", choices=list(SHAPES), help="these families only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forward", action="store_true", help="the peaks after the first forward instead")
    parser.add_argument("--folders", type=Path, default=DEFAULT_FOLDERS, help="where the built folders are cached")
    args = parser.parse_args()
    import torch

    families = args.only or [f for f in SHAPES if args.quick or args.large or f not in LARGE]
    start = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}"
    print(f"start: {start}", flush=True)
    rows = []
    for family in families:
        folder = folder_for(family, args.quick, args.folders)
        rows.append((measure_forward if args.forward else measure)(family, folder, args.repeats))
        print(" | ".join(rows[-1]), flush=True)
    print(f"end: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}")
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads; median of "
        f"{args.repeats}, calls alternated in one process; peaks in fresh child processes"
    )
    if args.forward:
        print(table(FORWARD_HEADERS, rows, title=f"Peak memory after the first forward ({start})"))
        return
    print(table(HEADERS, rows, title=f"Loading against from_pretrained ({start})"))
    print("targets: ratio <= 1.0x, our peak / weights <= 1.2x")


if __name__ == "__main__":
    main()
