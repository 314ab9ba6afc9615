"""A schedule TS finds blocked while a loop bound is a runtime value is reported as TS qualifies it."""

import pytest
from fixtures import runtime_rows

import tslab
from tslab import fake


@pytest.fixture(scope="module")
def verdict():
    design = tslab.capture(runtime_rows.copy_runtime_rows, fake.tensor("f16", (8, 256)),
                           fake.tensor("f16", (8, 256)), 8)
    return tslab.check(design)


def test_blocked_under_a_runtime_bound_is_not_called_a_proven_deadlock(verdict):
    assert verdict.status == "BLOCKED (ASSUMED)"
    assert not verdict.ok
    assert [e.kind for e in verdict.errors] == ["blocked-assumed"]


def test_the_issue_quotes_the_assumption_and_a_fitting_hint(verdict):
    issue = verdict.errors[0]
    assert "TS assumed one loop trip for FillTask" in issue.message
    assert "may be a FALSE POSITIVE (domain defaults to 1)" in issue.message
    assert "DrainTask blocked on stripRing.ConsumerWait" in issue.message
    assert "compile-time int" in issue.hint
    assert "validate-only mode" in issue.hint and "tslab.capture_call(builder)" in issue.hint
    assert "more stages" not in issue.hint


def test_compile_time_bounds_keep_proven_deadlocks():
    from tslab.kernels import design

    verdict = tslab.check(design("demo_deadlock"))
    assert verdict.status == "DEADLOCK"


def test_a_task_manager_built_quietly_is_compared_through_what_ts_warned():
    result = tslab.capture_all(runtime_rows.copy_runtime_rows_quietly, fake.tensor("f16", (8, 256)),
                               fake.tensor("f16", (8, 256)), 8)
    manager = result.managers[0]
    assert manager.silent and manager.options["verbose"] is False
    assert any(w.startswith("TS validation (_print_task_schedules)") for w in manager.ts_warnings)
    verdict = tslab.check(manager.design)
    assert verdict.status == "BLOCKED (ASSUMED)"
    assert "_print_task_schedules" in verdict.failed_checks
    assert manager.agreement(verdict) == {"warned checks": True, "checker outcome": True}
    assert "TS printed no result (verbose=False); checks that failed: _print_task_schedules" in result.text()
    assert f"exhaustive checker: {verdict.checker.verdict}" in result.text()
