"""Lesson 8's exercise, solved: a SiluBackward tiling near the roofline (the sweep's best).

Check: npusim lesson check 8 docs/lessons/solutions/08_silu_backward.py
"""

TILING = {"tile_length": 2048, "buffer_num": 2}
