"""What a chip model may say: the products, topologies, memory kinds, cost classes and dtypes
it may name, the keys that may be zero, and the smallest buffers (``checks.py`` holds a model to
them)."""

MEMORY_KINDS = ("HBM", "LPDDR4X")


NON_NEGATIVE = {"aiv_per_ai_core", "gm_latency_cycles", "head_cycles", "b32_cycles_per_fractal",
                "l0c_to_gm_bytes_per_cycle", "fixpipe_startup_cycles",
                "bias_table_bytes", "fixpipe_buffer_bytes", "ub_to_l1_bytes_per_cycle",
                "l1_to_ub_bytes_per_cycle", "l0c_to_ub_bytes_per_cycle",
                "fixpipe_elements_per_cycle", "hf32_cycles_per_fractal", "hf32_mantissa_bits",
                "cross_core_flag_cycles", "sync_all_cycles", "cross_core_flag_ids",
                "local_move_startup_cycles"}


# The least each buffer must hold for the shipped kernels' smallest tilings (assumed from
# them: a 16 x 16 x 16 cube block double-buffered through L1/L0, a vector tile of a few
# 32-byte blocks per queue plus the fp32 work tiles of the widest vector kernel).
MIN_BUFFER_BYTES = {"ub_bytes": 16 * 1024, "l1_bytes": 64 * 1024, "l0a_bytes": 16 * 1024,
                    "l0b_bytes": 16 * 1024, "l0c_bytes": 32 * 1024}


PRODUCTS = ("atlas-training", "atlas-a2", "atlas-inference")


TOPOLOGIES = ("coupled", "separated")


COST_CLASSES = ("f16", "f32", "int")


KNOWN_DTYPES = ("float16", "float32", "bfloat16", "hfloat32", "int8", "uint8", "int16",
                "int32", "uint32", "int64")
