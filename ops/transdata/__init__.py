"""TransData, the format conversions the convolution needs (NCHW <-> NC1HWC0 / FRACTAL_Z): the
plans and kernel (kernel), grouped weights (groups), per-tap layouts (taps) and the core split
of CANN's TIK tilings (tik_split)."""
