"""Trained stacks: synthetic word-order tasks, training and task accuracy, checkpoints.

Training is not measuring: a trained stack is measured by the one measuring loop like any model, through its
adapter (orderlab/models/trained.py)."""
