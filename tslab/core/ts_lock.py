"""One thread at a time builds or checks TS objects.

CuTe DSL's JIT (run by TS constructors such as ``WorkQueue``) and TS's checks keep process-wide state, so two
threads building at once (a Studio re-checking in the background while a cell lowers a design) can make a
valid design fail to build. Every path into TS takes this lock; it is re-entrant.
"""

from __future__ import annotations

import threading

TS_LOCK = threading.RLock()
