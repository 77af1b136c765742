"""The demo tasks the shipped checkpoints were trained on, their training and evaluation, and the experiments
run on them (built on the library in model/, which never imports this package)."""
