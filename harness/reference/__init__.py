"""Independent reference models for the importer parity tests, one module per format.

Each is written here from that format's published definition, with its exact parameter names (so that
`state_dict()` has the keys a real checkpoint has) and its own math (its LayerNorm, its masking, its
PE table computed the way it computes it), and records its attention weights the way its code exposes
them. Nothing here imports this project's model code.
"""
