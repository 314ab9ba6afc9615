"""Design JSON is checked against ``tslab/schemas/design.v1.json``: a wrong shape is one DesignError."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tslab
from tslab import Design, DesignError, Verdict
from tslab.core.schema import design_schema, validate_design_document
from tslab.kernels import NAMES


def catalog_documents() -> list[dict[str, Any]]:
    """Every catalog design as plain data, and one with pipeline and schedule edits on top."""
    docs = [tslab.kernels.design(name).to_dict() for name in NAMES]
    edited = tslab.kernels.tma_copy.design(stages=4).with_pipeline("smem_ring", num_stages=2)
    task = edited.tasks()[0]
    edited = edited.with_schedule(task, edited.schedule(task))
    return [*docs, edited.to_dict()]


DOCS = catalog_documents()


@pytest.mark.parametrize(("doc", "match"), [
    ({"kernel": "tma_copy", "pipelines": {"smem_ring": "4"}},
     r"design JSON: pipelines\.smem_ring=\"4\" is a string\n  hint: pipelines\.smem_ring must be an object"),
    ({"kernel": "tma_copy", "schedules": {"LoadTask": 3}},
     r"design JSON: schedules\.LoadTask=3 is a number\n  hint: schedules\.LoadTask must be a list of steps"),
    ({"kernel": "tma_copy", "tslab_design": -1}, r"tslab_design=-1 is not allowed\n  hint: .* the format version 1"),
    ({"kernel": "tma_copy", "tslab_design": {"a": None}}, r"tslab_design=\{\"a\": null\} is not allowed"),
    ({"kernel": "tma_copy", "bogus": 1}, r"unknown key 'bogus'\n  hint: the keys allowed here are alias_groups, "),
    ({"params": {}}, r"has no 'kernel' key"),
    ([], r"design JSON: document=\[\] is a list"),
    ({"kernel": "tma_copy", "schedules": {"LoadTask": [["smem_ring", "ConsumerWait", "Middle"]]}},
     r"schedules\.LoadTask\[0\]\[2\]=\"Middle\" is not allowed\n  hint: .* a section: Head, Loop or Tail"),
    ({"kernel": "tma_copy", "alias_groups": [["a"]]}, r"alias_groups\[0\]\[0\]=\"a\" is a string"),
    ({"kernel": "tma_copy", "schedules": {"LoadTask": [["smem_ring", "ProducerAcquire", "Loop", None, "Sometimes"]]}},
     r"schedules\.LoadTask\[0\]\[4\]=\"Sometimes\" is not allowed\n  hint: .* a loop guard: \"Always\", \"FirstIter\", "
     r"\"LastIter\", \"every\(n\)\", \"every\(n, start=s\)\", \"when_true\(<condition>\)\" or "),
])
def test_wrong_shapes_name_the_path_what_was_found_and_what_is_allowed(doc, match):
    with pytest.raises(DesignError, match=match):
        Design.from_json(json.dumps(doc))


def test_catalog_designs_fit_the_schema():
    for doc in DOCS:
        validate_design_document(doc)
        assert Design.from_dict(doc).to_dict() == doc


def test_captured_designs_keys_pass_the_schema_then_are_captured_again():
    doc = {**DOCS[0], "source": {"file": "no/such/k.py", "function": "host", "arch": "sm_90a"},
           "knobs": {"STAGES": 3, "dims": [1, 2]}}
    validate_design_document(doc)
    with pytest.raises(DesignError, match=r"source file 'no/such/k.py': does not exist here"):
        Design.from_dict(doc)


def test_the_schema_ships_in_the_package():
    assert design_schema()["$schema"].endswith("2020-12/schema")


# -- mutations: whatever the JSON, only a Verdict or a DesignError comes out ---------------------------------

def _scalars(big: int) -> st.SearchStrategy:
    return st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-big, max_value=big),
        st.sampled_from([0, -1, 1, big, math.nan, math.inf, -math.inf, 1e308, 0.5]),
        st.text(max_size=8), st.text(min_size=500, max_size=2000),
    )


def _values(big: int) -> st.SearchStrategy:
    return st.recursive(_scalars(big), lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)


# Kernel parameters stay small: a loop count such as tiles=10**9 is a valid design whose TS check is linear
# in the trip count (minutes), which is a matter of bounding work, not of the document's shape.
VALUES, PARAM_VALUES = _values(2**70), _values(64)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(doc: Any, data: st.DataObject) -> Any:
    path = data.draw(st.sampled_from(_paths(doc)))
    kind = data.draw(st.sampled_from(["drop", "swap", "nest", "add"]))
    if not path:
        return data.draw(VALUES) if kind == "swap" else doc
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    values = PARAM_VALUES if path[0] == "params" else VALUES
    if kind == "drop":
        del parent[last]
    elif kind == "swap":
        parent[last] = data.draw(values)
    elif kind == "nest":
        parent[last] = data.draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    elif isinstance(parent[last], dict):
        parent[last][data.draw(st.text(max_size=12))] = data.draw(PARAM_VALUES if path == ("params",) else values)
    elif isinstance(parent[last], list):
        parent[last].append(data.draw(values))
    return doc


MUTATED = st.data()


def _mutated_text(data: st.DataObject) -> str:
    doc = json.loads(json.dumps(data.draw(st.sampled_from(DOCS))))
    for _ in range(data.draw(st.integers(1, 3))):
        doc = _mutate(doc, data)
    return json.dumps(doc, allow_nan=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=MUTATED)
def test_mutated_design_json_gives_a_verdict_or_a_design_error(data):
    text = _mutated_text(data)
    try:
        verdict = tslab.check(Design.from_json(text), max_states=5_000)
    except DesignError:
        return
    assert isinstance(verdict, Verdict)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=MUTATED)
def test_mutated_design_json_from_the_cli_exits_0_1_or_2_without_a_traceback(data, tmp_path):
    path = tmp_path / "design.json"
    path.write_text(_mutated_text(data))
    out = subprocess.run([sys.executable, "-m", "tslab.cli", "check", str(path), "--max-states", "5000"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode in (0, 1, 2), out.stderr[-2000:]
    assert "Traceback" not in out.stdout + out.stderr


def test_cli_reports_a_wrong_shape_as_one_error_and_exits_2(tmp_path):
    path = tmp_path / "design.json"
    path.write_text(json.dumps({**DOCS[1], "pipelines": {"smem_ring": "4"}}))
    out = subprocess.run([sys.executable, "-m", "tslab.cli", "check", str(path)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == ['tslab: [input] design JSON: pipelines.smem_ring="4" is a string',
                                       "  hint: pipelines.smem_ring must be an object of PipelineConfig fields "
                                       "(field: value)"]
