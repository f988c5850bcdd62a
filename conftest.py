"""Root pytest configuration of the repository: hypothesis profiles, torch threads, the
portability marker.

The names the doctests use (``tf``, ``np``) are injected by ``topofl/conftest.py``, which ships
with the package so that ``pytest --doctest-modules --pyargs topofl`` runs the doctests of an
installed topofl too (the way ``networkx/conftest.py`` injects ``nx``).
"""

from __future__ import annotations

import pytest

# ------------------------------------------------------------------ hypothesis profiles
# The default suite runs every property test at a few examples (a quick check a user waits
# for); ``--hypothesis-profile=ci`` (what .ci/run passes) runs each at the number of examples
# its own @settings asks for. Explicit @settings(max_examples=N) would override a profile, so
# the default profile caps them at collection instead.
from hypothesis import settings as _hyp_settings  # noqa: E402

#: Examples per property test in the default suite.
FAST_EXAMPLES = 8
# derandomized: the same examples every run, so the default suite's time and outcome are
# stable; the ci profile draws new ones each run
_hyp_settings.register_profile("fast", max_examples=FAST_EXAMPLES, deadline=None,
                               derandomize=True)
_hyp_settings.register_profile("ci", deadline=None)
_hyp_settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if (config.getoption("hypothesis_profile", None) or "fast") != "fast":
        return
    for item in items:
        fn = getattr(item, "obj", None)
        inner = getattr(getattr(fn, "hypothesis", None), "inner_test", None)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if inner is None or own is None or own.max_examples <= FAST_EXAMPLES:
            continue
        fn._hypothesis_internal_use_settings = _hyp_settings(own, max_examples=FAST_EXAMPLES)


# ------------------------------------------------------------------ torch threads
#: Environment variable: torch's intra-op threads for the test session (default 1). The tests
#: train tiny models, where a second thread buys little on a quiet machine and, on a loaded
#: one, spinning threads made single tests 5-10x slower (pfeddst's contract test: 4.2 s with
#: one thread, 37.6 s with two, at load 8 on 2 cores).
TEST_THREADS_ENV = "TOPOFL_TEST_THREADS"


def pytest_configure(config: pytest.Config) -> None:
    import os

    import torch

    torch.set_num_threads(int(os.environ.get(TEST_THREADS_ENV, "1")))


# ------------------------------------------------------------------ portability
#: The test modules most exposed to the CPU's kernels: two computation paths of one quantity
#: (stacked or alone, sliced or whole, tiles or whole, batched or per client, several ranks or
#: one process) and the certificates that compare values across CPU kinds. Marked
#: ``portability``: .ci/run runs them again with torch's kernels forced to lower instruction
#: sets (``ATEN_CPU_CAPABILITY=default``, and ``avx2`` with MKL's compatible path), which
#: stands for another CPU kind on the same machine.
PORTABILITY_MODULES = (
    "tests/engine/test_stack.py",
    "tests/figures/test_certificates.py",
    "tests/algorithms/test_knn_per.py",
    "tests/algorithms/test_equivalences.py",
    "tests/engine/test_gossip_executors.py",
    "tests/engine/test_streaming.py",
    "tests/engine/test_eval_live_rows.py",
    "tests/algorithms/test_ggc_active_rows.py",
    "tests/engine/test_crossentropy.py",
    "tests/models/test_vmap.py",
    "tests/distributed/test_equivalence.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item: pytest.Item) -> None:
    path = getattr(item, "path", None)
    if path is not None and any(path.as_posix().endswith(m) for m in PORTABILITY_MODULES):
        item.add_marker(pytest.mark.portability)
