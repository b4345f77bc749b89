"""config.json (+ optional weight manifest) -> Plan: parameters, structure, memory, cards, cost.

Pure Python, standard library only: no I/O beyond the package's own data
files, no network, no torch.
"""

__all__: list[str] = []
