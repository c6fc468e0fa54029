"""The results vocabulary: the words measure/ writes and results/ and report/ read, torch-free (the layers contract).

Column and case names, verdict words, and the digest, partial and running-summary types a run hands its writer: a
view (plot, report, check's comparison) reads a results folder through these without loading the measuring code.
"""
