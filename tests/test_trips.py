"""Real trip counts: a kernel whose loop bound is a runtime value, checked for the trip counts the user names."""

import pytest
from fixtures import runtime_rows

import tslab
from tslab import fake
from tslab.core.trips import plan


@pytest.fixture(scope="module")
def rows():
    """Fill runs n trips, drain takes its first row in its head and n-1 trips: TS's one trip for both blocks."""
    return tslab.capture(runtime_rows.copy_runtime_tiles, fake.tensor("f16", (8, 256)),
                         fake.tensor("f16", (8, 256)), 8)


REAL = {"FillTask": "n", "DrainTask": "n-1"}


def test_the_one_trip_assumption_says_how_to_check_real_trips(rows):
    verdict = tslab.check(rows)
    assert verdict.status == "BLOCKED (ASSUMED)"
    assert "tslab.check(design, trips={'FillTask': 'n', 'DrainTask': 'n'}, n=range(1, 9))" in verdict.errors[0].hint


def test_trip_counts_prove_the_named_n_only(rows):
    verdict = tslab.check(rows, trips=REAL, n=range(1, 9))
    assert verdict.status == "SAFE" and verdict.ok
    assert verdict.trips["n"] == list(range(1, 9)) and verdict.trips["failed_at"] is None
    assert "trip counts: n = 1..8 (FillTask: n, DrainTask: n-1): proven for these n only" in verdict.text()
    assert [c["status"] for c in verdict.trips["checked"]] == ["SAFE"] * 8
    assert verdict.to_mime()["trips"]["n"] == list(range(1, 9))


def test_the_first_failing_n_is_the_verdict(rows):
    verdict = tslab.check(rows, trips={"FillTask": "n", "DrainTask": "n"}, n=range(1, 9))
    assert verdict.status == "DEADLOCK"
    assert verdict.trips["failed_at"] == 1 and verdict.trips["n"] == [1]
    assert verdict.errors[0].message.endswith("[n=1]")
    assert "fails at n=1" in verdict.text()
    assert verdict.trace is not None and verdict.trace.fault.kind == "deadlock"
    assert verdict.to_mime()["trips"]["failed_at"] == 1


@pytest.mark.parametrize("trips", [REAL, {"FillTask": "n", "DrainTask": "n"}, {"FillTask": "n+1", "DrainTask": "n-1"}])
def test_trips_agree_between_the_strategies(rows, trips):
    for n in (1, 2, 3):
        auto = tslab.check(rows, trips=trips, n=n)
        ts = tslab.check(rows, trips=trips, n=n, strategy="ts")
        assert (auto.status, auto.checker.verdict) == (ts.status, ts.checker.verdict), n


@pytest.mark.parametrize(("trips", "n", "match"), [
    ({"FillTask": "n+"}, range(1, 3), r"trips\['FillTask'\]: 'n\+' does not parse as a formula in n"),
    ({"FillTask": "m"}, range(1, 3), r"trips\['FillTask'\]: 'm' does not parse as a formula in n \('m' is not n"),
    ({"FillTask": "n/2"}, range(1, 3), r"'n / 2' is not n, an int or \+, -, \*, // of them"),
    ({"Fill": "n"}, range(1, 3), r"trips\['Fill'\]: names no task of this design\n  hint: did you mean 'FillTask'"),
    ({"FillTask": "n-2"}, range(1, 3), r"trips\['FillTask'\]: 'n-2' gives -1 trips at n=1"),
    ({"FillTask": [1]}, range(1, 3), r"trips\['FillTask'\]: \[1\] is not a formula"),
    ({"FillTask": "n"}, None, r"check: trips without n"),
    ({"FillTask": "n"}, "1..8", r"n='1..8' is not a non-empty sequence of ints >= 0"),
    ({}, range(1, 3), r"trips=\{\} is not a non-empty dict"),
])
def test_bad_trip_counts_are_design_errors_that_name_the_place(rows, trips, n, match):
    with pytest.raises(tslab.DesignError, match=match):
        tslab.check(rows, trips=trips, n=n)


def test_n_without_trips_is_refused():
    with pytest.raises(tslab.DesignError, match=r"n=4 without trips"):
        tslab.check(tslab.kernels.design("tma_copy"), n=4)


def test_formulas_evaluate_with_ints_and_floor_division():
    p = plan({"A": "2*n+1", "B": "(n - 1) // 2", "C": 3}, range(1, 4), ["A", "B", "C"])
    assert [p.counts(v) for v in p.values] == [{"A": 3, "B": 0, "C": 3}, {"A": 5, "B": 0, "C": 3},
                                               {"A": 7, "B": 1, "C": 3}]
    assert p.describe() == "n = 1..3 (A: 2*n+1, B: (n - 1) // 2, C: 3)"
