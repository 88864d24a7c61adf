"""Data-only package: ``pretrained.pt``, the GE2E speaker-encoder weights of Resemblyzer 0.1.4 (Apache-2.0).

Nothing here is meant to be imported. VoiceHub locates the file with
``importlib.metadata.distribution("voicehub-ge2e-weights").locate_file("voicehub_ge2e_weights/pretrained.pt")``;
see ``NOTICE`` in the distribution for its origin and checksum.
"""
