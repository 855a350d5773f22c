"""One module per command, each with its parser (``add_parser``: the command's options and
help texts) and its handler (``handle``: read the parsed arguments, one call into
:mod:`fsyncbench.api`, print, return the exit code). Commands know nothing of each other:
what several share is in :mod:`fsyncbench.cli.shared_options` and
:mod:`fsyncbench.cli.output`."""
