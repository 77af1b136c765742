"""The network: configuration, the encoder-decoder Transformer, attention, positional encodings, recording hooks."""
