"""The offline lecture pack, one package: what it holds (records.py: the inputs and their captures; export.py,
weights.py, onnx_graphs.py: the network and tokenizer exported for the browser) and the page it writes (page.py,
live.py, static/: its scripts, style and vendored runtimes). Entry points: pages/lecture_pack.py, cli/pack.py."""
