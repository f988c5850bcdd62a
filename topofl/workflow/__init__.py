"""The machinery behind a run call: its provenance (what it was called with and where
it comes from), its memory model and its plan (will it fit, how long will it take).
``topofl.run`` (:mod:`topofl.api`), configs (:mod:`topofl.config`) and sweeps
(:mod:`topofl.sweep`) are the faces that use it.
"""

__all__: list[str] = []
