import asyncio
import threading

from tslab.widgets.view_writer import ViewWriter


def test_a_request_from_another_thread_draws_on_the_owners_loop():
    drawn = []

    async def main():
        writer = ViewWriter(lambda: drawn.append(threading.current_thread()))
        worker = threading.Thread(target=lambda: [writer.request() for _ in range(5)])
        worker.start()
        worker.join()
        assert drawn == []  # the owner is busy here: nothing drew on the worker
        await asyncio.sleep(0.05)

    asyncio.run(main())
    assert drawn == [threading.main_thread()]  # five requests, one draw of the newest state, on the owner


def test_flush_on_the_owner_draws_what_was_asked_for_once():
    count = []

    async def main():
        writer = ViewWriter(lambda: count.append(1))
        worker = threading.Thread(target=writer.request)
        worker.start()
        worker.join()
        writer.flush()  # as a blocking wait on the owner does
        writer.flush()
        await asyncio.sleep(0.05)  # the scheduled redraw finds nothing left to draw

    asyncio.run(main())
    assert count == [1]


def test_without_a_loop_the_caller_draws():
    drawn = []
    writer = ViewWriter(lambda: drawn.append(threading.current_thread()))
    worker = threading.Thread(target=writer.request)
    worker.start()
    worker.join()
    assert drawn == [worker]
