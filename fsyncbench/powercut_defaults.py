"""The defaults of ``powercut cycle`` and of the listener it starts (``powercut listen``'s
too), in one place for the three that state them: the command line's options and their help
(:mod:`fsyncbench.cli.commands.powercut`), the Python API (:func:`fsyncbench.api.powercut_cycle`,
:func:`fsyncbench.api.powercut_listen`) and the plan
(:func:`fsyncbench.powercut.cycle_plan.make_plan`).

A module of its own beside :mod:`fsyncbench.powercut`, not in it: importing anything in that
package runs its ``__init__``, which imports the listener, the writer and verify (the report
renderers with it), and the CLI, which builds every command's help at each start, and the
API, whose signatures hold these values, would pay that (about 70 ms) on every command."""

#: --bind: the listener's address (this machine only; a two-machine test gives its LAN address).
BIND = "127.0.0.1"
#: --port: the listener's TCP port (0: any free one).
PORT = 5400
#: --state: the listener's durable record, an SQLite file in the current directory.
STATE = "fsyncbench-powercut-listener.db"

#: --cycles: how many cycles.
CYCLES = 1
#: --cut-after: the cut comes this many seconds after the run's first recorded commit, drawn
#: uniformly from the range LO..HI.
CUT_AFTER = "2..10"
#: --start-timeout-seconds: the wait for the first recorded commit after --start.
START_TIMEOUT_S = 300.0
#: --command-timeout-seconds: the wait for each --cut, --restore and --verify run.
COMMAND_TIMEOUT_S = 120.0
#: --verify-timeout-seconds: the wait for --verify to give a verdict (retried).
VERIFY_TIMEOUT_S = 900.0
#: --retry-every-seconds: the wait between --verify attempts.
RETRY_EVERY_S = 5.0
