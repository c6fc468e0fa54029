"""The one measuring loop, its rows and metrics, noise and verdicts, probing, attention maps, corpus mode."""
