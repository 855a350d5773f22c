"""Power-cut test: does the storage keep every commit it acknowledged? (issue 6)

The diskchecker method (Brad Fitzpatrick, diskchecker.pl) for a SQLite step journal. A
listener on a second machine durably records each commit a writer reports *after* COMMIT
returned; the user pulls the writer's power; after the reboot verify checks that every
recorded commit is still in the journal.

Modules: :mod:`.protocol` (versioned line-delimited JSON, validation, client helpers),
:mod:`.secret` (the listener's shared secret, its file and the HMAC proof every
connection starts with), :mod:`.listener` (the server; its durable
record :mod:`.listener_state`, one peer's connection :mod:`.connection`), :mod:`.run` (the
writer's on-disk layout under ``DIR/.fsyncbench-powercut/``), :mod:`.writer`,
:mod:`.verify` (the command after the reboot: the journal on disk :mod:`.journal`, the
judgement :mod:`.judgement`, what verify prints and a saved report reads :mod:`.view`),
:mod:`.ranges`; :mod:`.cycle` runs the whole experiment with the user's
commands for start, cut, restore and verify, N times (``powercut cycle``; its plan
:mod:`.cycle_plan`, its results :mod:`.cycle_results`).
Nothing here prints: the CLI passes ``log``/``status`` callbacks and prints the text.
"""

from fsyncbench.powercut.listener import listen
from fsyncbench.powercut.protocol import parse_address
from fsyncbench.powercut.run import POWERCUT_DIRNAME
from fsyncbench.powercut.verify import verify
from fsyncbench.powercut.writer import format_status, format_summary, write

__all__ = [
    "listen",
    "write",
    "verify",
    "parse_address",
    "format_status",
    "format_summary",
    "POWERCUT_DIRNAME",
]
