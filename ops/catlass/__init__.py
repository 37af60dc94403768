"""A GEMM shaped like CATLASS's ``BlockMmad<MmadAtlasA2Preload>`` (matmul.py) and its block tiling
and swizzle (tiling.py); the validation table's CATLASS rows run it."""
