"""python -m model.checkpoints.formats: the registered checkpoint formats, as a Markdown table for the docs."""

from . import REGISTRY

print("| format | what it is |\n|---|---|")
for fmt in REGISTRY:
    print(f"| `{fmt.NAME}` | {fmt.TITLE} |")
