"""Reports are user input: a fuzzed report is loaded, shown and compared, and the only way
out is a one-line FsyncbenchError (exit 2), never another exception (a traceback)."""

import json

import pytest
import sampled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsyncbench import report as report_out
from fsyncbench.errors import FsyncbenchError
from fsyncbench.report import compare, regression, store
from fsyncbench.report import tables as render

BASE = json.loads(store.report_to_json(sampled.report(1.0, seed=0, n=1200)))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "samples_ns":
                yield (*prefix, k)  # replaced whole, never walked
            else:
                yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from _paths(v, (*prefix, i))


PATHS = [p for p in _paths(BASE) if p]
#: What the statistics read: drawn as often as everything else together.
HOT = [
    p
    for p in PATHS
    if p[0] in ("results", "floors")
    and any(
        k in p
        for k in ("samples_ns", "slice_counts", "slice_rounds", "summary", "kind", "primitive")
    )
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def _mutated(path, value):
    data = json.loads(json.dumps(BASE))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(data)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS) | st.sampled_from(HOT), JSON_VALUES)
def test_a_fuzzed_report_loads_renders_and_compares_or_is_refused_in_one_line(path, value):
    text = _mutated(path, value)
    try:
        report = store.report_from_json(text, "fuzzed.json")
    except FsyncbenchError as exc:
        assert "\n" not in str(exc)
        return
    report_out.render(report, "text")
    report_out.render(report, "markdown")
    render.render_csv(report)
    try:
        compare.check_comparable([report, report], ["a", "b"])
    except FsyncbenchError:
        return
    pair = compare.compare_pair(report, report)
    render.render_compare(report, report, pair, ["a", "b"])
    regression.regressions(pair, 20, "a", "b")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "null",
        '{"schema_version": true}',
        "{" * 5000,
        '{"schema_version": 2}',
        "\x00\x01",
        '{"schema_version": 1e999}',
    ],
)
def test_garbage_is_one_line(text):
    with pytest.raises(FsyncbenchError) as info:
        store.report_from_json(text, "g.json")
    assert "\n" not in str(info.value)
