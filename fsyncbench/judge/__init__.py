"""Verdict rules as small functions over recorded facts, one module per job.

``rule_facts``: what every rule reads (``Facts``: the recorded host, results and evidence),
the helpers over it, the documents findings cite and the thresholds, each with its source.
``stack``: reading the recorded storage stack (media, RAM at the bottom, layers that drop
or forward flushes, the block layers whose counters count). ``devices``: device classes,
their honest-flush floors and drives known to have power-loss protection.

Path rules, one function per signal, by family: ``platform_rules`` (what the path is made
of: filesystem, RAM media, a sync-disabling preload, barriers, macOS fsync, hypervisor
defaults, cloud block storage, layers forwarding the flush, virtualization, a stack that
could not be followed, a model a published power-cut test saw lose writes), ``cache_rules``
(a RAID controller's cache in front of the disks), ``counter_rules`` (device flush and write counters, libc
interposition, flushes reaching a bare-metal disk) and ``timing_rules`` (sweep bandwidth,
a flush that costs nothing, latency against the device-class floor). ``path_rules``: their
order (``PATH_RULES``, strongest signal first), the verdict of one primitive
(``judge_primitive``) and the weaker signals (``weaker_signals``).

``commit_rules``: config durability, the commit checks (syncs per commit, FULL vs OFF,
commit vs S x one flush) and slowness. ``evidence_rules``: findings that show the recorded
evidence, whether or not it decided. ``engine``: the verdict of a report (``judge``) and of
a saved one re-derived (``rejudge``); its docstring lists the signals in the order they are
weighed. ``gates``: the CI gates over a report.

Imports go one way: rule_facts < the rule families < path_rules < engine (commit_rules and
evidence_rules read rule_facts only). A name with a leading underscore is a helper of this
package, shared between its modules, not an API.
"""
