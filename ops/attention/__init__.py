"""Flash attention on Atlas A2: aclnnFlashAttentionScore (``forward.py``, a mix kernel: the
cube's ``fa_cube.py``, the vector cores' ``fa_vector.py``), its tiling and argument rules."""

from npusim.ops.attention.forward import flash_attention_score

__all__ = ["flash_attention_score"]
