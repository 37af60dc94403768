"""The engine's own micro-kernels: what ``npusim demo`` runs and the engine tests pin."""
