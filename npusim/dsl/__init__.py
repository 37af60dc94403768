"""The kernel DSL: ``from npusim.dsl import *`` gives a kernel the Ascend C vocabulary."""

from npusim.dsl.context import current, issue
from npusim.dsl.core import (
                             DataCopyExtParams,
                             DataCopyPadExtParams,
                             DataCopyParams,
                             HardEvent,
                             TBuf,
                             TPosition,
                             TQue,
                             cross_core_set_flag,
                             cross_core_wait_flag,
                             data_copy,
                             data_copy_pad,
                             get_block_idx,
                             get_block_num,
                             get_sub_block_idx,
                             get_value,
                             is_aic,
                             is_aiv,
                             pipe_barrier,
                             scalar_ops,
                             set_atomic_add,
                             set_atomic_none,
                             set_flag,
                             set_value,
                             sync_all,
                             wait_flag,
)
from npusim.dsl.pipe import Kernel, TPipe
from npusim.dsl.steady import steady
from npusim.engine.memory import GlobalTensor, LocalTensor
from npusim.isa.base import Pipe

__all__ = [
    "current", "issue", "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyParams",
    "HardEvent", "TBuf", "TPosition", "TQue", "cross_core_set_flag", "cross_core_wait_flag",
    "data_copy", "data_copy_pad", "get_block_idx", "get_block_num", "get_sub_block_idx",
    "get_value", "is_aic", "is_aiv", "pipe_barrier", "scalar_ops", "set_atomic_add",
    "set_atomic_none", "set_flag", "set_value", "steady", "sync_all", "wait_flag", "Kernel",
    "TPipe", "Pipe", "GlobalTensor", "LocalTensor",
]
