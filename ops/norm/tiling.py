"""The host tilings of RmsNorm and RmsNormGrad (after ops-nn norm/rms_norm/op_host/
rms_norm_tiling.cpp, mode Normal): rows split over the vector cores, ``block_factor`` =
ceil(rows / cores) rows per core (the last core takes the rest), one whole row (``ub_factor``
elements, the row rounded up to 16 elements) resident in UB at a time, and ``row_factor`` = 64 rows'
rstd gathered in UB before one copy out.

Modelled: mode Normal only. CANN's MergeN mode (rows of at most 2000 elements, several rows per
UB pass) and SplitD mode (a row that does not fit UB, walked in column chunks) are not modelled:
a row that does not fit is a TilingError naming the largest that does. ``buffer_num`` is 1 as in
CANN; 2 double-buffers x and y.
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up

ROW_FACTOR = 64      # rows whose rstd one UB batch gathers (FLOAT_PER_REAPEAT)
COL_ALIGN = 16       # a row buffer holds whole 16-element pieces (BLOCK_ALIGN_NUM)
SMALL_BYTES = 32 + 32 + 256 + 256   # the rstd scalar block, a block of ones, Brcb's repeat,
#                                     and the reduce buffer (64 fp32, reduce_fp32_buf)
USER_FIELDS = ("block_dim", "row_factor", "buffer_num")


@dataclass(frozen=True, kw_only=True)
class RmsNormTiling:
    """Host tiling of RmsNorm and RmsNormGrad. Users may override ``block_dim``, ``row_factor``
    and ``buffer_num``; the other fields are derived from them and the shape."""

    rows: int            # rows of x (the product of the dims gamma does not cover) (num_row)
    cols: int            # elements per row, gamma's size (num_col)
    block_dim: int       # vector cores used, ceil(rows / block_factor)
    block_factor: int    # rows per core; the last core takes rows - (block_dim - 1) x this
    row_factor: int      # rows per batch: their rstd (or dgamma partial) stays in UB (row_factor)
    ub_factor: int       # elements of each row buffer, cols rounded up to 16 (ub_factor)
    buffer_num: int      # buffers of the x/dy and y/dx queues: 1 as CANN, 2 double buffering

    @property
    def last_rows(self) -> int:
        return self.rows - (self.block_dim - 1) * self.block_factor


def ub_bytes_needed(kind: str, ub_factor: int, row_factor: int, buffer_num: int,
                    x_item: int, g_item: int) -> int:
    """UB bytes of the kernel's buffers (``kernel.py``/``grad_kernel.py`` allocate them)."""
    row_x, row_g, row_f = (round_up(ub_factor * n, 32) for n in (x_item, g_item, 4))
    rstd = round_up(row_factor * 4, 32)
    if kind == "forward":   # x, y (queues); gamma; rstd (queue); x fp32 (16-bit); x^2 fp32
        wide = row_f if x_item == 2 else 0
        return buffer_num * (2 * row_x + rstd) + row_g + wide + row_f + SMALL_BYTES
    # grad: dy, x, dx (queues), rstd in (queue); gamma; rstd broadcast blocks (32 bytes a row);
    # dgamma and a work row in fp32, and x and dy in fp32 for 16-bit x
    rows_f = 2 + (2 if x_item == 2 else 0)
    return buffer_num * (3 * row_x + rstd) + row_g + rows_f * row_f + row_factor * 32 \
        + SMALL_BYTES


def rms_norm_tiling(chip, op: str, kind: str, rows: int, cols: int, x_dtype, g_dtype,
                    overrides: dict | None = None) -> RmsNormTiling:
    """The tiling for ``rows`` x ``cols`` on ``chip`` (kind "forward" or "grad")."""
    user = dict(overrides_of(overrides, op))
    limit = max(min(rows, chip.vector_core_count), 1)
    factor = ceil_div(rows, limit) if rows else 1
    t = RmsNormTiling(rows=rows, cols=cols, block_dim=ceil_div(rows, factor) if rows else 1,
                      block_factor=factor, row_factor=ROW_FACTOR,
                      ub_factor=round_up(cols, COL_ALIGN), buffer_num=1)
    if user:
        for key in set(user) - set(USER_FIELDS):
            if key in {f for f in t.__dataclass_fields__}:
                raise TilingError(f"{op}: tiling {key} is derived from the shape; override "
                                  f"{', '.join(USER_FIELDS)}")
        t = override(t, user, op)
        _validate_user(op, t, rows, limit)
        if kind == "grad" and t.buffer_num != 1:
            raise TilingError(f"{op}: buffer_num = {t.buffer_num}: the grad kernel's four input "
                              "queues and its flags take every MTE2 <-> V event id with one "
                              "buffer each; allowed 1")
        if "block_dim" in user:
            t = override(t, {"block_factor": ceil_div(rows, t.block_dim) if rows else 1}, op)
            if rows and t.last_rows <= 0:
                raise TilingError(f"{op}: block_dim = {t.block_dim} leaves the last core no rows "
                                  f"({rows} rows, {t.block_factor} per core); use "
                                  f"{ceil_div(rows, t.block_factor)}")
    _check_ub(chip, op, kind, t, np.dtype(x_dtype).itemsize, np.dtype(g_dtype).itemsize)
    return t


def _validate_user(op: str, t: RmsNormTiling, rows: int, limit: int) -> None:
    if not 1 <= t.block_dim <= limit:
        raise TilingError(f"{op}: block_dim = {t.block_dim}: {rows} rows on "
                          f"{limit if rows >= limit else 'these'} cores; allowed 1 to {limit}")
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    if not 8 <= t.row_factor <= 4096 or t.row_factor % 8:
        raise TilingError(f"{op}: row_factor = {t.row_factor}: a multiple of 8 from 8 to 4096 "
                          "(whole 32-byte blocks of fp32 rstd)")


def _check_ub(chip, op, kind, t: RmsNormTiling, x_item: int, g_item: int) -> None:
    need = ub_bytes_needed(kind, t.ub_factor, t.row_factor, t.buffer_num, x_item, g_item)
    if need <= chip.ub_bytes:
        return
    most = t.ub_factor
    while most > COL_ALIGN and ub_bytes_needed(kind, most, t.row_factor, t.buffer_num, x_item,
                                               g_item) > chip.ub_bytes:
        most -= COL_ALIGN
    raise TilingError(f"{op}: a row of {t.cols} elements with buffer_num = {t.buffer_num} and "
                      f"row_factor = {t.row_factor} needs {need} bytes of UB; {chip.name} has "
                      f"{chip.ub_bytes}: at most {most} elements fit (CANN's SplitD mode for "
                      "longer rows is not modelled)")
