"""Every model behind one protocol (adapter_protocol.py), so that one measuring loop serves them all.

`build.build_adapters` turns a concrete spec into one adapter per condition: an encoding of the attention
stack (stack.py), a trained stack from a checkpoint (trained.py), or a position ablation of a pretrained
model (pretrained.py).
"""
