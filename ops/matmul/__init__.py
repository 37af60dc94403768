"""aclnnMatmul for 2-D operands (the FC layer and its two backward GEMMs) on the CATLASS-shaped
kernel of ops/catlass (args, operator)."""
