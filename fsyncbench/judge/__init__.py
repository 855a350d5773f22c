"""Verdict rules as small functions over recorded facts.

``stack``: reading the recorded storage stack (media, RAM at the bottom, layers that drop
or forward flushes, the block layers whose counters count). ``devices``: device classes,
their honest-flush floors and drives known to have power-loss protection. The rule engine
itself is :mod:`fsyncbench.judge.audit` (to be split into this package).
"""
