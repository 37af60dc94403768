"""The pieces of the ACL runtime a ported aclnn host program calls, on numpy "device memory".

Device memory is a numpy ``uint8`` array from ``aclrtMalloc``; ``aclrtMemcpy`` copies bytes between
it and host numpy arrays; ``aclCreateTensor`` puts a typed, strided view on it. The two-phase
plumbing (``two_phase`` and ``execute``) turns operator exceptions into aclnn status codes.
"""

from dataclasses import dataclass, field

import numpy as np

from npusim.dtypes import dtype_of
from npusim.errors import (
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    NpusimError,
    ParamError,
)

ACL_SUCCESS = ACLNN_SUCCESS
ACLNN_ERR_INNER = 561000          # aclnn's internal-error status (the kernel could not run)
ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE = "float32", "float16", "bfloat16", "float64"
ACL_INT8, ACL_INT32, ACL_INT64, ACL_UINT8, ACL_BOOL = "int8", "int32", "int64", "uint8", "bool"
ACL_FORMAT_ND = 2
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE = 0, 1    # aclrtMemcpyKind, as in acl_rt.h
ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE = 2, 3
MEMCPY_KINDS = {0: "ACL_MEMCPY_HOST_TO_HOST", 1: "ACL_MEMCPY_HOST_TO_DEVICE",
                2: "ACL_MEMCPY_DEVICE_TO_HOST", 3: "ACL_MEMCPY_DEVICE_TO_DEVICE"}
ACL_ERROR_INVALID_PARAM = 100000          # acl_base.h: a runtime call's parameter is invalid
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001   # acl_base.h: device memory could not be allocated
ACLNN_ERR_PARAM_NULLPTR = ACLNN_ERR_PARAM_NULLPTR
ACLNN_ERR_PARAM_INVALID = ACLNN_ERR_PARAM_INVALID

__all__ = [
    "ACL_SUCCESS", "ACLNN_ERR_INNER", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_PARAM_INVALID",
    "ACL_FLOAT", "ACL_FLOAT16", "ACL_BF16", "ACL_DOUBLE", "ACL_INT8", "ACL_INT32", "ACL_INT64",
    "ACL_UINT8", "ACL_BOOL", "ACL_FORMAT_ND", "ACL_MEM_MALLOC_HUGE_FIRST",
    "ACL_MEMCPY_HOST_TO_HOST", "ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST",
    "ACL_MEMCPY_DEVICE_TO_DEVICE", "ACL_ERROR_INVALID_PARAM", "ACL_ERROR_RT_MEMORY_ALLOCATION",
    "Tensor", "Stream", "Executor",
    "aclInit", "aclFinalize", "aclrtSetDevice", "aclrtResetDevice", "aclrtCreateStream",
    "aclrtDestroyStream", "aclrtSynchronizeStream", "aclrtMalloc", "aclrtFree", "aclrtMemcpy",
    "aclCreateTensor", "aclDestroyTensor", "aclGetRecentErrMsg",
]

_state = {"chip": "atlas-a2", "message": ""}


class Tensor:
    """An aclTensor: a typed view (shape, element strides, offset) on device memory.

    ``Tensor(array)`` wraps a numpy array directly; ``aclCreateTensor`` builds one as the C API
    does. ``array`` is the view itself: writing an operator's output goes through it.
    """

    def __init__(self, array: np.ndarray):
        self.array = array

    @property
    def shape(self) -> tuple:
        return tuple(self.array.shape)

    @property
    def dtype(self):
        return self.array.dtype

    def __repr__(self):
        return f"Tensor({self.array.dtype}, shape={self.shape})"


@dataclass
class Stream:
    """An aclrtStream: operators launched on it run in order; their Results collect here."""

    results: list = field(default_factory=list)


@dataclass
class Executor:
    """An aclOpExecutor: what phase one prepared for phase two. It runs once."""

    op: str
    workspace_size: int
    run: object                      # () -> Result, writing the outputs
    used: bool = False
    result: object = None


def aclInit(config=None) -> int:
    return ACL_SUCCESS


def aclFinalize() -> int:
    return ACL_SUCCESS


def aclrtSetDevice(device_id: int = 0, *, chip: str = "atlas-a2") -> int:
    """Choose the simulated chip the following operators run on (``npusim.chips()``)."""
    from npusim.chip import load_chip

    try:
        load_chip(chip)
    except NpusimError as exc:
        return _fail(ACLNN_ERR_PARAM_INVALID, str(exc))
    _state["chip"] = chip
    return ACL_SUCCESS


def aclrtResetDevice(device_id: int = 0) -> int:
    return ACL_SUCCESS


def current_chip() -> str:
    return _state["chip"]


def aclrtCreateStream() -> tuple[int, Stream]:
    return ACL_SUCCESS, Stream()


def aclrtDestroyStream(stream: Stream) -> int:
    return ACL_SUCCESS


def aclrtSynchronizeStream(stream: Stream) -> int:
    """Operators run to completion when launched; there is nothing to wait for."""
    return ACL_SUCCESS


def aclrtMalloc(size: int, policy: int = ACL_MEM_MALLOC_HUGE_FIRST) -> tuple[int, np.ndarray]:
    """(status, device memory of ``size`` bytes); more than the chip's HBM, or than this host
    can hold, is ACL_ERROR_RT_MEMORY_ALLOCATION and no memory."""
    from npusim.chip import host_memory_bytes, load_chip

    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
        message = f"aclrtMalloc: size {size!r} is not a byte count (an integer >= 0)"
        return _fail(ACL_ERROR_INVALID_PARAM, message), None
    chip, host = load_chip(_state["chip"]), host_memory_bytes()
    if size > chip.hbm_bytes or size > host // 2:
        return _fail(ACL_ERROR_RT_MEMORY_ALLOCATION, f"aclrtMalloc: {int(size):,} bytes; "
                     f"{chip.name} has {chip.hbm_bytes:,} bytes of {chip.memory_kind} and the "
                     "simulator keeps "
                     f"device memory in host memory ({host:,} bytes, at most half used)"), None
    return ACL_SUCCESS, np.zeros(int(size), np.uint8)


def aclrtFree(ptr) -> int:
    return ACL_SUCCESS


def aclrtMemcpy(dst, dst_max: int, src, count: int, kind: int) -> int:
    """Copy ``count`` bytes from ``src`` to ``dst`` (numpy arrays, host or device)."""
    if isinstance(kind, bool) or kind not in MEMCPY_KINDS:
        return _fail(ACL_ERROR_INVALID_PARAM, f"aclrtMemcpy: kind {kind!r} is not an "
                     f"aclrtMemcpyKind; allowed: " + ", ".join(f"{v} ({k})" for k, v in
                                                              MEMCPY_KINDS.items()))
    if not isinstance(dst, np.ndarray) or not isinstance(src, np.ndarray):
        return _fail(ACL_ERROR_INVALID_PARAM, f"aclrtMemcpy: dst and src must be memory (numpy "
                     f"arrays); got {type(dst).__name__} and {type(src).__name__}")
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
        return _fail(ACL_ERROR_INVALID_PARAM, f"aclrtMemcpy: count {count!r} is not a byte "
                     "count (an integer >= 0)")
    src_bytes = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
    if count > dst_max or count > src_bytes.size or count > dst.nbytes:
        return _fail(ACLNN_ERR_PARAM_INVALID, f"aclrtMemcpy: {count} bytes do not fit "
                     f"(dst {dst.nbytes}, dst_max {dst_max}, src {src_bytes.size})")
    dst.reshape(-1).view(np.uint8)[:count] = src_bytes[:count]
    return ACL_SUCCESS


def aclCreateTensor(view_dims, data_type, stride, offset: int, fmt: int, storage_dims,
                    tensor_data) -> Tensor | None:
    """A Tensor viewing ``tensor_data`` (device memory) as ``data_type`` with ``view_dims`` and
    element strides ``stride`` from element ``offset``; None (with a message) if it does not fit."""
    try:
        dt = dtype_of(data_type)
        if not isinstance(tensor_data, np.ndarray):
            raise NpusimError(f"aclCreateTensor: tensor_data is a {type(tensor_data).__name__}, "
                              "not device memory from aclrtMalloc")
        flat = tensor_data.reshape(-1).view(np.uint8)[offset * dt.itemsize:].view(dt)
        shape = tuple(int(d) for d in view_dims)
        strides = tuple(int(s) for s in (stride if stride is not None else _c_strides(shape)))
        if len(strides) != len(shape) or any(n < 0 for n in shape):
            raise NpusimError(f"aclCreateTensor: view_dims {list(shape)} and strides "
                              f"{list(strides)}: one non-negative dimension and one stride "
                              "per dimension")
        reach = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0)
        if any(n == 0 for n in shape):
            reach = -1
        if any(s < 0 for s in strides) or reach >= flat.size:
            raise NpusimError(f"aclCreateTensor: shape {shape} with strides {strides} reaches "
                              f"element {reach}; the memory holds {flat.size}")
        view = np.lib.stride_tricks.as_strided(flat, shape, [s * dt.itemsize for s in strides])
    except (NpusimError, ValueError, TypeError) as exc:
        message = str(exc) if isinstance(exc, NpusimError) else (
            f"aclCreateTensor: view_dims {view_dims!r}, data_type {data_type!r}, stride "
            f"{stride!r}, offset {offset!r}: {exc}")
        _fail(ACLNN_ERR_PARAM_INVALID, message)
        return None
    return Tensor(view)


def _c_strides(shape) -> list[int]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= max(n, 1)
    return strides


def aclDestroyTensor(tensor) -> int:
    return ACL_SUCCESS


def aclGetRecentErrMsg() -> str:
    """Why the last call that failed failed."""
    return _state["message"]


def _fail(code: int, message: str) -> int:
    _state["message"] = message
    return code


def array_of(tensor):
    """The numpy view behind an argument, or None for a null pointer."""
    if tensor is None:
        return None
    if isinstance(tensor, Tensor):
        return tensor.array
    raise ParamError(f"expected an aclTensor (npusim.aclnn.Tensor), got {type(tensor).__name__}")


def two_phase(op: str, prepare) -> tuple[int, int, Executor | None]:
    """Phase one: ``prepare()`` checks the arguments and returns (workspace_size, run)."""
    try:
        workspace_size, run = prepare()
    except ParamError as exc:
        return _fail(exc.code, str(exc)), 0, None
    except NpusimError as exc:
        return _fail(ACLNN_ERR_PARAM_INVALID, str(exc)), 0, None
    return ACL_SUCCESS, workspace_size, Executor(op, workspace_size, run)


def execute(op: str, workspace, workspace_size: int, executor, stream) -> int:
    """Phase two: run the executor phase one prepared; a status, never an exception."""
    if not isinstance(executor, Executor) or executor.op != op:
        return _fail(ACLNN_ERR_PARAM_INVALID, f"{op}: the executor is not one that "
                     f"{op}GetWorkspaceSize returned")
    if executor.used:
        return _fail(ACLNN_ERR_PARAM_INVALID, f"{op}: this executor has already run; "
                     "call GetWorkspaceSize again for another run")
    if workspace_size < executor.workspace_size or (executor.workspace_size and workspace is None):
        return _fail(ACLNN_ERR_PARAM_INVALID, f"{op}: workspace of {workspace_size} bytes; "
                     f"{executor.workspace_size} are needed")
    executor.used = True
    try:
        executor.result = executor.run()
    except NpusimError as exc:
        return _fail(ACLNN_ERR_INNER, f"{op}: {exc}")
    if isinstance(stream, Stream):
        stream.results.append(executor.result)
    return ACL_SUCCESS
