"""Trained stacks: synthetic word-order tasks (tasks.py), training and task accuracy (train.py), checkpoints.

Training is not measuring: a trained stack is measured by the one measuring loop like any model, through its
adapter (orderlab/models/trained.py).
"""
