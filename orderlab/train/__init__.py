"""Trained stacks: synthetic word-order tasks, training, checkpoints, and trained stacks as adapters (adapters.py).

Training is not measuring: a trained stack is measured by the one measuring loop like any model, through its
adapter; its task accuracy rows are orderlab/measure/task_accuracy.py."""
