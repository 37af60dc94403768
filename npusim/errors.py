"""The npusim error family.

Every error the simulator raises on purpose is an ``NpusimError``. Messages say what was wrong, the
value given and what is allowed. ``ParamError`` carries the aclnn status code (161001 for a missing
tensor, 161002 for any other invalid parameter).
"""

ACLNN_SUCCESS = 0
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002


class NpusimError(Exception):
    """Base class of every error npusim raises deliberately."""


class ParamError(NpusimError):
    """An operator argument breaks the aclnn rules; ``code`` is the aclnn status."""

    def __init__(self, message: str, code: int = ACLNN_ERR_PARAM_INVALID):
        super().__init__(message)
        self.code = code


class TilingError(NpusimError):
    """A tiling cannot run on the chip: buffers overflow, too many cores, misalignment."""


class ChipModelError(NpusimError):
    """A chip description is malformed: unknown or missing key, bad or inconsistent value."""


class DeadlockError(NpusimError):
    """The run ended with a pipe still blocked on a flag, or set/wait flags do not balance."""


class HazardError(NpusimError):
    """Two pipes touch overlapping on-chip bytes with nothing ordering them."""


class UnwrittenReadError(HazardError):
    """An instruction reads on-chip bytes that nothing in the launch wrote before it."""


class GmWriteConflictError(HazardError):
    """Two cores write the same GM bytes without atomics and with no sync_all between them."""


class NumericsRequiredError(NpusimError):
    """``numerics=False`` asked of a kernel whose control flow reads the data (indices)."""


class MemoryAccessError(NpusimError):
    """An access falls outside a GM tensor or an on-chip buffer."""


class OutOfMemoryError(NpusimError):
    """An operator's tensors and workspace do not fit the chip's HBM, or the host's memory."""
