"""The documentation and the observation apart (issue 31 item 6): what SQLite's
documentation says of a configuration and what the recording of this SQLite build showed
are two columns, each with its source; delete/full's and truncate/normal's "not durable"
come from the recording, memory/*'s documentation warns of corruption only."""

from __future__ import annotations

import dataclasses

from fsyncbench import api
from fsyncbench.model import Pragmas
from fsyncbench.powerloss import promises
from fsyncbench.powerloss.matrix import run_matrix
from fsyncbench.powerloss.plan import PowerlossPlan

JOURNAL_DOC = "https://www.sqlite.org/pragma.html#pragma_journal_mode"
SYNC_DOC = "https://www.sqlite.org/pragma.html#pragma_synchronous"


def _result(tmp_path, *configs: Pragmas, semantics: str = "linux"):
    plan = PowerlossPlan(configs, models=("synced-only",), semantics=semantics, commits=3)
    return run_matrix(tmp_path, plan)


def test_documentation_and_observation_are_kept_apart_with_their_sources(tmp_path):
    result = _result(
        tmp_path,
        Pragmas("DELETE", "FULL"),
        Pragmas("TRUNCATE", "NORMAL"),
        Pragmas("MEMORY", "FULL"),
        Pragmas("WAL", "FULL"),
    )
    by = {c.pragmas.label: c for c in result.configs}
    said = {
        label: (c.documentation.short(), c.observation.short())
        for label, c in by.items()
        if c.documentation is not None and c.observation is not None
    }
    assert said == {
        # the documentation leaves durability open; the recording shows the unsynced point
        "delete/full": ("not stated", "not durable"),
        "truncate/normal": ("not stated, may corrupt", "not durable"),
        # the documentation warns of corruption mid-transaction, not of lost commits
        "memory/full": ("not stated, may corrupt", "durable"),
        "wal/full": ("durable", "durable"),
    }
    delete = by["delete/full"]
    assert delete.documentation is not None and delete.observation is not None
    assert delete.documentation.source == SYNC_DOC
    assert "'provides additional durability" in delete.documentation.why
    assert delete.observation.why == "the journal's unlink not synced before 3 of 3 acks"
    assert delete.observation.source.startswith("this recording (SQLite ")
    memory = by["memory/full"]
    assert memory.documentation is not None and memory.documentation.source == JOURNAL_DOC
    # expected: durable by the observation (the docs do not say), not consistent (the docs)
    assert (memory.documented_durable, memory.documented_consistent) == (True, False)
    assert memory.agreement(memory.models[0]) == "agrees"  # was "no loss under this model"
    assert (delete.documented_durable, delete.agreement(delete.models[0])) == (False, "agrees")


def test_the_table_shows_two_columns_and_the_method_both_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # the table's header on one line
    result = _result(tmp_path, Pragmas("DELETE", "FULL"), Pragmas("WAL", "FULL"))
    text = api.render(result, "text", verbose=True)
    header = next(line for line in text.splitlines() if line.startswith("configuration "))
    assert [h.strip() for h in header.split("  ") if h.strip()][-3:] == [
        "documented",
        "observed",
        "measured vs expected",
    ]
    row = next(line for line in text.splitlines() if line.startswith("delete/full "))
    assert row.split()[-4:] == ["stated", "not", "durable", "agrees"]
    flat = " ".join(text.split())
    assert "delete/full: loses up to 1 acknowledged commit (synced-only); documented not " in flat
    assert "documented not stated; observed not durable" in flat
    assert "Documented. What SQLite's documentation says" in flat
    assert f"closely by a power loss' ({SYNC_DOC})" in flat
    assert "Observed. Whether each acknowledged commit's last change" in flat
    assert "(this recording (SQLite " in flat and "linux semantics))" in flat
    # a report written before the sources were kept apart still renders
    old = dataclasses.replace(
        result,
        configs=tuple(
            dataclasses.replace(c, documentation=None, observation=None) for c in result.configs
        ),
    )
    old_text = " ".join(api.render(old, "text", verbose=True).split())
    assert "Documented promise. From https://www.sqlite.org/pragma.html" in old_text
    assert (
        "delete/full: loses up to 1 acknowledged commit (synced-only); documented not durable"
        in (old_text)
    )


def test_macos_source_code_facts_are_marked_as_source_not_documentation(tmp_path):
    result = _result(tmp_path, Pragmas("DELETE", "EXTRA", True), semantics="macos")
    (c,) = result.configs
    assert c.documentation is not None and c.observation is not None
    assert c.documentation.durable == promises.NOT_DURABLE
    assert "(source, not documentation)" in c.documentation.why
    assert "os_unix.c (unixDelete)" in c.documentation.source
    # the recording's directory sync after the unlink is a plain fsync: not durable on macOS
    assert c.observation.durable == promises.NOT_DURABLE
    assert c.observation.why == "the journal's unlink not synced before 3 of 3 acks"
    (tmp_path / "linux").mkdir()
    linux = _result(tmp_path / "linux", Pragmas("DELETE", "EXTRA", True))
    (c,) = linux.configs
    assert c.observation is not None and c.observation.durable == promises.DURABLE


# ------------------------------------------ which filesystems leave each model's states


def test_every_model_says_which_filesystems_can_leave_its_states(tmp_path):
    from fsyncbench.powerloss.models import MODELS
    from fsyncbench.report.loss_fs import MODEL_FILESYSTEMS, SOURCES

    assert set(MODEL_FILESYSTEMS) == set(MODELS)
    for model, (_states, can, never, sources) in MODEL_FILESYSTEMS.items():
        assert can and never, model
        assert all(name.strip() in SOURCES for name in sources.split(";")), model
    plan = PowerlossPlan((Pragmas("WAL", "FULL"),), models=("synced-only", "subset"), commits=2)
    text = " ".join(api.render(run_matrix(tmp_path, plan), "text", verbose=True).split())
    section = text.split("Which filesystems can leave each model's states")[1]
    section = section.split("The worst state of each")[0]
    assert "- synced-only: every file as of its last sync" in section
    assert "- subset: each unsynced write, truncation and directory change" in section
    assert "- prefix:" not in section  # only the models of this result
    assert "ext4 journal doc: https://docs.kernel.org/filesystems/ext4/journal.html" in section
    assert "ext4 data=ordered and data=writeback and xfs leave those" in section


def test_the_docs_show_the_model_to_filesystem_table():
    from pathlib import Path

    from fsyncbench.powerloss.models import MODELS
    from fsyncbench.report.loss_fs import SOURCES

    doc = (Path(__file__).resolve().parents[1] / "docs" / "powerloss.md").read_text()
    table = doc.split("| model | its states | can leave them |")[1].split("\n\n")[0]
    assert [line.split("|")[1].strip(" `") for line in table.splitlines()[2:]] == list(MODELS)
    for url in SOURCES.values():
        for one in url.split(", "):
            assert one in doc, one


def test_the_terminal_gets_the_answer_and_the_main_columns_unless_verbose(tmp_path):
    result = _result(tmp_path, Pragmas("WAL", "NORMAL"), Pragmas("WAL", "FULL"))
    brief, whole = (api.render(result, "text", verbose=v) for v in (False, True))
    assert "wal/full: loses 0 (synced-only)" in brief and "wal/full: loses 0" in whole
    assert "The worst state of each" in whole and "The worst state of each" not in brief
    assert "--verbose, or --format markdown" in " ".join(brief.split())
    header = next(line for line in brief.splitlines() if line.startswith("configuration "))
    assert "crash" not in header and "crash" in " ".join(whole.split())
    assert api.render(result, "markdown") == api.render(result, "markdown", verbose=True)
