"""One road from a design to a compiled kernel, for catalog targets and captured sources alike.

``targets`` resolves a catalog design against its kernel's ``RULES`` into a :class:`~tslab.compiling.targets.Target`;
``compile`` runs ``cute.compile`` with the edits applied at TaskManager construction (and keeps what a worker
compiled), reads ptxas' report and writes object files; ``captured`` and ``captured_export`` do the same for a
captured kernel's own host function; the exported packages' code itself is :mod:`tslab.exported`.
``tslab.gpu`` runs these in its worker; nothing here needs a GPU.
"""
