"""Every model behind one protocol (adapter_protocol.py), so that one measuring loop serves them all.

An adapter is an encoding of the attention stack (stack_adapter.py, built from the spec by stack_builder.py), a
position ablation of a pretrained or seeded Hugging Face family (pretrained.py, hf/), or, one layer up, a trained
stack (orderlab/train/adapters.py); orderlab/measure/adapters.py picks one per condition. Models import no
measuring code: what an adapter needs (chunk sizing, pooling) lives here, what it is given (the probe's sentences)
is passed in.
"""
