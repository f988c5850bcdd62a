"""The tools the command line runs beside a run: the demo (``topofl demo``) and the
benchmarks (``topofl bench``).
"""

__all__: list[str] = []
