"""The face: what a user of the command sees.

``cli`` parses the ``npusim`` command line and ``commands`` does what each command asks;
``demo`` and ``bench`` are the two commands that need more than a few lines; ``report`` words
one run or a side-by-side comparison, ``charts`` and ``plot`` draw them (``plot.pipeline``,
``plot.memory``: also ``npusim.plot``); ``outdir`` writes a command's output folder whole or
not at all; ``progress`` is the line long work prints.
"""
