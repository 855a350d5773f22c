"""Turning reports into text people read: shared formatting of durations and intervals.

(The renderers themselves still live in :mod:`fsyncbench.render` and
:mod:`fsyncbench.render_html`; they move here as the package is split.)
"""
