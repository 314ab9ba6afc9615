"""What the GPU tests hold every exported package's call to, whatever its kind: a CUDA graph captures it and
replays it bit for bit, it launches on the caller's stream and on no other, and two threads calling it on two
streams each get their own results. And how a test imports an exported package: by its name, as a user does."""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any


@contextlib.contextmanager
def imported(folder: Path) -> Iterator[ModuleType]:
    """The package written to ``folder``, imported by its name with the folder's parent on ``sys.path`` while in
    use."""
    sys.path.insert(0, str(folder.parent))
    try:
        yield importlib.import_module(folder.name)
    finally:
        sys.path.remove(str(folder.parent))


def graph_replay_equals_eager(call: Callable[[], Any], outputs: Sequence[Any]) -> bool:
    """``call`` run eagerly (on a side stream, as torch's docs warm up before a capture), then captured in a CUDA
    graph; the outputs poisoned, the graph replayed: True when every output equals the eager one bit for bit."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    eager = [out.clone() for out in outputs]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    for out in outputs:
        out.fill_(-7)
    torch.cuda.synchronize()
    graph.replay()
    torch.cuda.synchronize()
    return all(torch.equal(out, want) for out, want in zip(outputs, eager, strict=True))


def launches_on(call: Callable[[Any], Any], output: Any) -> dict[str, bool]:
    """Where ``call(stream)`` launches, seen by holding a stream busy (``torch.cuda._sleep``) first: the output is
    unwritten while only that stream waits and written once it has run. ``call`` gets the busy stream to launch on
    (as ``stream=`` or as torch's current stream)."""
    import torch

    torch.cuda.synchronize()
    output.fill_(-7)
    torch.cuda.synchronize()
    busy = torch.cuda.Stream()
    with torch.cuda.stream(busy):
        torch.cuda._sleep(2_000_000_000)  # about a second at the H200's clocks
    poisoned = output.clone()  # on the default stream, which the busy one does not hold up
    call(busy)
    torch.cuda.current_stream().synchronize()
    waited = torch.equal(output, poisoned) and not busy.query()
    busy.synchronize()
    return {"waited_for_its_stream": waited, "written_after": not torch.equal(output, poisoned)}


def two_threads_on_two_streams(call: Callable[[int], tuple[Any, Any]], rounds: int = 50) -> list[bool]:
    """Two threads, each on a stream of its own, call ``call(thread)`` ``rounds`` times; ``call`` returns (what the
    kernel wrote, what it should have): True for each thread whose every round matched."""
    import torch

    results: list[bool] = [False, False]
    errors: list[BaseException] = []

    def worker(thread: int) -> None:
        try:
            stream = torch.cuda.Stream()
            ok = True
            with torch.cuda.stream(stream):
                for _ in range(rounds):
                    got, want = call(thread)
                    stream.synchronize()
                    ok = ok and bool(torch.equal(got, want))
            results[thread] = ok
        except BaseException as exc:  # reported by the caller's assert
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
