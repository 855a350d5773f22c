"""fsyncbench: what a durable journal commit costs here, and whether the storage keeps it."""

__version__ = "0.1.0"
