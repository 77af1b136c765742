"""Checkpoints: this project's folder (save/load), the formats it imports (formats/, one module per format and
a registry), safe reading of files, folders and archives, training snapshots, the demos and served folders."""
