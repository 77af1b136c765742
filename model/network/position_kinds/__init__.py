"""The positional kinds, one module each: a kind is one module here and one line in registry.py.

A kind module holds what the library and the pages read of it:
- NAME (the config's `positional` value), TITLE and DESCRIPTION (marked with N_, translated where shown: the kind's
  short name, and the Model page's line);
- INSIDE_ATTENTION: True when it adds nothing to the embeddings and acts inside self-attention (a rotation of q and
  k, a bias on the scores), False when a table is added to the embeddings;
- PACK_TEXT: the lecture pack's sentence for a kind acting inside attention (None: the pack shows its table);
- APP: its app half (ui/views/positional_views/NAME.py: what the pages say and draw of it), found by the registry;
- make(config, bidirectional) -> the positional module of one stack (bidirectional: the encoder's).
The formulas themselves live in model/network/positional.py, shared by the kinds and the pages' views.
"""
