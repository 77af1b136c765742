"""The helpers of single pages (each used by one page or two), and the app halves of the decoding strategies (decoding_views/) and positional kinds (positional_views/)."""
