"""What a Studio sends the page, and what a burst of widget messages loses when the page's server reads slowly.

Every ipywidgets widget (its Layout and style too) is a comm: one ``comm_open`` on the kernel's IOPub socket. ZeroMQ
drops what a PUB socket cannot queue for a subscriber that has fallen behind (about a thousand messages a socket by
default), so a cell that makes thousands of widgets while the server is busy can lose some, and the page then waits
for models that never come ("widget model not found").

    python benchmarks/widget_comms.py            # the Studios' counts, then the burst probe (about a minute)
"""

from __future__ import annotations

import argparse
import collections
import queue
import time

STUDIOS = ("tma_copy", "gemm_sm90", "gemm_sm100", "attention_tmem", "attention_sm90")


def studio_counts() -> None:
    """Widgets a Studio makes when it is displayed, and then when its schedules tab is first opened."""
    from ipywidgets.widgets.widget import _instances

    from tslab.kernels import design
    from tslab.widgets import Studio

    print("| kernel | widgets with the Studio | and when the schedules tab opens | most made |")
    print("|---|---|---|---|")
    for name in STUDIOS:
        before = set(_instances)
        studio = Studio(design(name))
        studio.wait()
        made = len(_instances) - len(before)
        kinds = collections.Counter(type(w).__name__ for k, w in _instances.items() if k not in before)
        studio.editors.selected_index = 1
        rows = len(_instances) - len(before) - made
        top = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common(3))
        print(f"| {name} | {made} | +{rows} | {top} |")
        studio.close()


def burst_probe(counts: tuple[int, ...], stall: float) -> None:
    """Make ``n`` HTML widgets in one cell of a real kernel while nothing reads its IOPub for ``stall`` seconds."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute("import ipywidgets", reply=True, timeout=120)
        _drain(client, 1.0)
        for n in counts:
            client.execute(f"made = [ipywidgets.HTML(str(i)) for i in range({n})]")
            time.sleep(stall)
            received = _drain(client, 3.0)["comm_open"]
            print(f"{n} widgets (with their Layouts and styles {3 * n} comm_open), nothing read for {stall:.0f} s: "
                  f"{received} comm_open received ({3 * n - received} lost)")
    finally:
        manager.shutdown_kernel(now=True)


def _drain(client, quiet: float) -> collections.Counter:
    seen: collections.Counter = collections.Counter()
    while True:
        try:
            seen[client.get_iopub_msg(timeout=quiet)["msg_type"]] += 1
        except queue.Empty:  # quiet for ``quiet`` seconds
            return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[300, 900, 3000])
    parser.add_argument("--stall", type=float, default=8.0, help="seconds nothing reads the IOPub socket")
    args = parser.parse_args()
    studio_counts()
    burst_probe(tuple(args.counts), args.stall)


if __name__ == "__main__":
    main()
