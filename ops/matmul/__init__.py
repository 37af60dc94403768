"""aclnnMatmul for 2-D operands (the FC layer and its two backward GEMMs): on Atlas A2 the
CATLASS-shaped kernel of ops/catlass (args, operator); on the Atlas training series CANN's
TransData + MatMulV2 route (training, transdata_nz, v2_kernel, v2_tiling)."""
