"""Reading what TS printed and warned while building a TaskManager."""

from tslab.capture.ts_report import checker_outcome, result_word, sections, warned_checks

LIMIT_HIT = """BFS complete: 1000000 states explored, 0 complete, 0 deadlock(s), 0 race(s), 0 PDL order violation(s)
WARNING: exhaustive checker hit max_states=1000000 before completing the search; no concrete issue was found.
Result: SAFE
"""


def test_the_checker_section_keeps_a_state_limit_warning():
    assert sections(LIMIT_HIT)["checker"] == LIMIT_HIT.strip()
    assert result_word(LIMIT_HIT) == "SAFE"


def test_warnings_name_the_failed_checks_and_the_checkers_outcome():
    warned = ["TS validation (_print_task_schedules): Schedule is blocked!",
              "TS validation (_exhaustive_aliasing_races): Exhaustive checker found 1 deadlock(s) after exploring 9",
              "smemP1.p_operands() produces 'p_desc_0_slot' but it is never routed to a downstream work call."]
    assert warned_checks(warned) == ["_print_task_schedules"]
    assert checker_outcome(warned) == "deadlock"
    assert checker_outcome(["Exhaustive checker hit max_states after exploring 1000000 states"]) == "not-proven"
    assert checker_outcome([]) == "safe"
