"""What a capture's child does: run one function with its output captured and its value pickled, then end.

A child of the fork server (:mod:`tslab.capture.server`) runs a job sent to it as bytes (:func:`run_job`: the
function and its arguments, by :mod:`tslab.capture.portable`); a fork of the caller runs the function it inherited
(:func:`run_here`). Either writes three files its parent reads back (:mod:`tslab.capture.worker`) and always ends
with ``os._exit``.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

from ..child import error_record, output_to
from . import portable


def run_here(fn: Callable[[], Any], result_path: str, out_path: str, err_path: str) -> None:
    """In the child: run ``fn`` with its output in ``out_path`` and ``err_path`` and its value (or error) pickled
    into ``result_path``; never returns."""
    code = 0
    try:
        faulthandler.disable()  # a crash here is reported by the parent, not dumped on its terminal
        output_to(out_path, err_path, flush=False)  # the parent flushed; a Jupyter kernel's streams are its threads'
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            payload: dict[str, Any] = {"value": fn()}
        except BaseException as exc:
            payload = {"error": error_record(exc)}
        with open(result_path, "wb") as f:
            try:
                pickle.dump(payload, f)
            except Exception as exc:
                f.seek(0)
                f.truncate()
                pickle.dump({"error": error_record(exc)}, f)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _arrived(job: bytes) -> Any:
    fn, args = portable.loads(job, as_main=True)
    return fn(*args)


def run_job(job: bytes, paths: list[str]) -> None:
    """Inside a child of the fork server: run the job :func:`tslab.capture.worker.run_in_child` sent; never returns."""
    run_here(lambda: _arrived(job), *paths)
