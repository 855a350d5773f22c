"""Measuring: the I/O patterns (the only writer under the target), the timing loop and
adaptive stop, run plans and rounds, audit evidence, and the statistics over raw samples."""
