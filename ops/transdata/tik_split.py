"""How CANN's TIK TransData kernels split their loop nest over the cores.

The static TIK tilings of TransData, whose Python is public (CANN 8.1.RC1,
``impl/trans_data_negative_target_ntc.py`` ``_get_mc_info_negative``), give the cores one axis
of the kernel's loop nest, the one whose loop count scores highest: a count of at least the
core count scores the core count plus its remainder, and the core count once more when it
divides evenly; a smaller count scores itself; the first axis wins a tie. Each core then takes
a contiguous run of ``ceil(count / used)`` units of that axis, ``used`` being the fewest cores
that keep that run length, and the whole of every other axis. The dynamic kernels compute
their tilings in a closed library; npusim assumes they split by the same rule.
"""

from npusim.ops.common import ceil_div


def axis_score(count: int, cores: int) -> int:
    """The split rule's score of an axis of ``count`` loop units on ``cores`` cores."""
    full, rest = (cores if count >= cores else 0), count % cores
    return full + rest + (cores if rest == 0 else 0)


def tik_lanes(units: list, cores: int) -> list:
    """Per core its piece indices, in order: ``units`` gives each piece its loop unit on every
    axis (tuples in the kernel's axis order); the cores split the axis the rule picks."""
    counts = [max(u[a] for u in units) + 1 for a in range(len(units[0]))]
    scores = [axis_score(n, cores) for n in counts]
    axis = scores.index(max(scores))
    n = counts[axis]
    run = ceil_div(n, ceil_div(n, ceil_div(n, cores)))
    lanes = [[] for _ in range(ceil_div(n, run))]
    for i, u in enumerate(units):
        lanes[u[axis] // run].append(i)
    return [lane for lane in lanes if lane]
