"""The engine: everything that runs a launch and times it.

``launch`` records each core's instruction stream from a kernel and runs it, on SimPy
(``timed``: ``processes``, the pipes and the scalar; ``bandwidth`` and ``atomic_lines``, the
shared GM/L2 and atomic adds) or in program order (``functional``); ``memory`` holds GM and the
on-chip buffers; ``sanitizer``, ``race_scope`` and ``race_order`` find races and deadlocks;
``beside`` moves the work that cannot change a result to a second process; ``sequence`` runs an
operator's kernels back to back on one stream, with ``kernel_costs``' fixed costs; ``trace``
records what ran, ``result`` is what comes back, ``trace_export`` writes its Chrome trace and
line trace.

The engine imports the shared data types (``npusim.errors``, ``npusim.chip``,
``npusim.dtypes``), the instruction set and the kernel DSL's recording context; never the
operators, the studies or the face.
"""
