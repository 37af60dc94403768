"""Flash attention on Atlas A2: aclnnFlashAttentionScore (``forward.py``, a mix kernel: the
cube's ``fa_cube.py``, the vector cores' ``fa_vector.py``) and aclnnFlashAttentionScoreGrad
(``grad.py``: ``fag_cube.py``, ``fag_vector.py``), their tiling and argument rules."""

from npusim.ops.attention.forward import flash_attention_score
from npusim.ops.attention.grad import flash_attention_score_grad

__all__ = ["flash_attention_score", "flash_attention_score_grad"]
