"""The browser tests' reading of the kernel's websocket frames, on frames written out here (no browser needed)."""

from __future__ import annotations

import json

from labkit import _frame_summary, unannounced_models


def _frame(t: float, msg_type: str, comm: str, refs: tuple[str, ...] = (), direction: str = "received") -> dict:
    state = {"_model_name": "VBoxModel", "children": [f"IPY_MODEL_{r}" for r in refs]}
    message = {"channel": "iopub", "header": {"msg_type": msg_type},
               "content": {"comm_id": comm, "data": {"state": state}}}
    return {"t": t, "dir": direction, **_frame_summary(json.dumps(message))}


def test_a_model_named_after_its_announcement_is_in_order():
    frames = [_frame(0.1, "comm_open", "aa"), _frame(0.2, "comm_open", "bb", ("aa",)),
              _frame(0.3, "comm_msg", "bb", ("aa",))]
    assert unannounced_models(frames) == []


def test_a_model_named_before_its_announcement_or_after_its_close_is_found():
    frames = [_frame(0.1, "comm_open", "bb", ("aa",)), _frame(0.2, "comm_open", "aa"),
              _frame(0.3, "comm_close", "aa", direction="sent"), _frame(0.4, "comm_msg", "bb", ("aa",))]
    found = unannounced_models(frames)
    assert len(found) == 2
    assert found[0] == "t=0.1: comm_open of VBoxModel bb names aa (never opened by then)"
    assert found[1].startswith("t=0.4: comm_msg") and found[1].endswith("(closed by then)")
