"""Lesson 8's exercise, broken on purpose: small tiles, one buffer each.

The check says gradInput is bit-exact and the run misses the target: loads and compute take
turns, and every tile pays the instructions' start-up again.
"""

TILING = {"tile_length": 1024, "buffer_num": 1}
