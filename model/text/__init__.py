"""Text in and out: tokenizers and vocabularies, and the checks and preparation of a typed input."""
