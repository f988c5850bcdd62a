"""What would decide an undecided result, and what it would cost: the *price* of a page.

A result whose headline is not decided (its verdict ``inconclusive at this scale``, or
``partly`` with undecided parts) says why each undecided part is undecided, and what deciding
it would take (:func:`price`), from what the result recorded alone:

* **more seeds** where the 95 % bounds cover the claim's edge: the number of seeds at which
  the bounds would clear the nearest edge if the seeds' mean and spread stayed as measured
  (:func:`seeds_needed`), priced at the committed run's time per seed;
* **longer runs** where the compared curves still moved: each doubling of the rounds costs
  about the committed run's time again (to the paper's horizon first, where the run stopped
  short of it);
* **columns not run**: the hours ``analysis/columns_cost.md`` measured for them;
* **a stand-in that passes its gate** (or its calibration): no amount of compute on this
  stand-in decides those parts; the paper's data or a better stand-in does;
* **a replication** of a close call (:mod:`topofl.figures.replication`): 3 fresh seeds,
  declared before they run, priced at the committed run's time per seed.

Hours *here* are the committed run's recorded wall time (``seconds``: the machine that made it,
shared with other jobs), scaled. The *one GPU* figure is an estimate, not a measurement: the
ratio of a comparable model's D-SGD round on a CPU and on an H100 measured on two other machines
(:data:`GPU_RATIO`; the basis of ``analysis/columns_cost.md``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topofl._utils.configfiles import read_config
from topofl.figures.checks import short_of_horizon
from topofl.figures.config import FigureError, _root

__all__ = ["GPU_RATIO", "Need", "price", "seeds_needed", "price_section", "apply", "COST_TABLE"]

#: CPU time / H100 time of a comparable model's D-SGD round at n = 100 (``topofl.run``, one
#: local step of batch 16), measured on two other machines (``analysis/bench_engine.md``, an
#: AMD EPYC at 2 threads, and ``analysis/bench_engine_cuda.md``, an H100): logistic regression
#: 8.55 ms / 3.24 ms (the basis of the small models), the 2-D CNN of 62,006 parameters 396 ms /
#: 14.6 ms (the basis of the convolutional ones). An estimate for these runs, not a measurement.
GPU_RATIO: Mapping[str, float] = {"logistic": 2.6, "mlp": 2.6, "cnn": 27.1, "cnn1d": 27.1,
                                  "gn_lenet": 27.1, "resnet18_gn": 27.1}

#: The measured cost of the columns the default scale leaves out.
COST_TABLE = "analysis/columns_cost.md"

_MAX_SEEDS = 1000


@dataclass(frozen=True)
class Need:
    """What one kind of missing evidence would take: ``kind`` (``"seeds"``, ``"rounds"``,
    ``"columns"``, ``"stand-in"``, ``"replication"``, ``"other"``), the undecided headline
    parts it covers, ``hours`` here (``None``: no compute on this stand-in decides them, or not
    costed), ``gpu_hours`` (an estimate, ``None`` where no basis) and the sentence that says it."""

    kind: str
    parts: tuple[str, ...]
    hours: float | None
    gpu_hours: float | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kind": self.kind, "parts": list(self.parts), "hours": self.hours,
                "gpu_hours": self.gpu_hours, "text": self.text}


def seeds_needed(check: Mapping[str, Any], *, most: int = _MAX_SEEDS) -> int | None:
    """The fewest seeds at which the check's one-sided 95 % bounds would decide it under the
    rule of :mod:`topofl.figures.checks` (a pass, a fail, or for a claim of "better" a measured
    tie) if the seeds' mean and spread stayed as measured; ``None`` beyond ``most`` or when
    the mean lies on an edge. ``check`` is a result JSON's check (``values``, ``threshold``,
    ``margin``, ``kind``, ``tie``, ``resolution``, ``censored``).

    Examples
    --------
    A mean effect of 0.5 with a spread of 1 against a margin of 0 needs t(0.95, n-1) / sqrt(n)
    < 0.5: 13 seeds.

    >>> c = {"values": [-0.5, 0.5, 1.5], "threshold": 0.0, "margin": 0.0, "kind": "above"}
    >>> tf.figures.price.seeds_needed(c)
    13
    """
    from scipy import stats

    vals = [float(v) for v in check["values"]]
    n = len(vals)
    if n < 2:
        return 3
    mean = math.fsum(vals) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - 1))
    sd = max(sd, float(check.get("resolution") or 0.0))
    thr, margin = float(check.get("threshold", 0.0)), float(check.get("margin", 0.0))
    kind = str(check.get("kind"))
    censored = any(check.get("censored") or ())
    e = mean if kind == "within" else (mean - thr) if kind == "above" else (thr - mean)

    def decided(half: float) -> bool:  # the rule of topofl.figures.checks at these bounds
        lo, hi = e - half, e + half
        if kind == "within":
            return (-margin <= lo and hi <= margin) or lo > margin or hi < -margin
        if check.get("tie") == "pass":  # at least as good: pass and fail at -margin
            return lo > -margin or hi < -margin
        tie = margin > 0 and -margin < lo and hi < margin and not censored
        return lo > margin or hi < 0 or tie

    if sd == 0:
        return n if decided(0.0) else None
    for k in range(n, most + 1):
        if decided(float(stats.t.ppf(0.95, k - 1)) * sd / math.sqrt(k)):
            return k
    return None


def _model(md: str) -> str | None:
    m = re.search(r"^\| model \| ([^|]+) \|$", md, re.M)
    if not m:
        return None
    names = [x.strip() for x in m.group(1).split(" / ")]
    return max(names, key=lambda x: GPU_RATIO.get(x, 0.0)) if names else None


def _columns_cost(name: str, root: Path) -> tuple[float, float | None, int]:
    """``(hours here, GPU hours, columns)`` of ``name``'s rows of the cost table."""
    path = root / COST_TABLE
    if not path.is_file():
        return 0.0, None, 0
    hours, count = 0.0, 0
    gpu: float | None = 0.0
    first = path.read_text(encoding="utf-8").split("\n## ", 1)[0]  # the table of columns
    for line in first.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or cells[0] != name:
            continue
        h = re.match(r"[\d.]+", cells[5])
        g = re.search(r"~([\d.]+) h", cells[6])
        if h is None:
            continue
        hours += float(h.group(0))
        gpu = gpu + float(g.group(1)) if (g and gpu is not None) else None
        count += 1
    return hours, (gpu if count else None), count


#: What a stand-in that could pass its gate would cost, by result (written by the analysis
#: script that estimates it, e.g. ``analysis/fmnist_dfedpgp_standin.py``).
STANDIN_COSTS = "analysis/standin_costs.json"


def _standin_costs(root: Path) -> dict[str, Any]:
    import json

    path = root / STANDIN_COSTS
    if not path.is_file():
        return {}
    got = json.loads(path.read_text(encoding="utf-8"))
    return got if isinstance(got, dict) else {}


def _standin_attempts(root: Path, name: str) -> list[str]:
    """What each stand-in tried for the result ``name`` measured: a result whose table in
    ``paper_figures/claims.toml`` lists ``name`` in its ``serves`` (a stand-in attempt with a
    fidelity gate of its own, e.g. ``dfedpgp_gate_fmnist``) and whose result JSON is
    committed: its gates' outcomes, tau and exact p against their bars."""
    import json

    claims = root / "paper_figures" / "claims.toml"
    if not claims.is_file():
        return []
    out = []
    for other, entry in read_config(claims).items():
        serves = entry.get("serves") if isinstance(entry, Mapping) else None
        if not isinstance(serves, list) or name not in serves:
            continue
        js = root / "paper_figures" / "results" / f"{other}.json"
        if not js.is_file():
            out.append(f"the stand-in `{other}` tried for it has no committed result yet")
            continue
        gates = json.loads(js.read_text(encoding="utf-8")).get("gates") or []
        said = [f"{g.get('name')}: {'passes' if g.get('passed') else 'fails'} its gate, "
                f"tau = {float(g['tau']):+.2f} (bar {float(g['tau_min']):+.2f}), exact "
                f"one-sided permutation p = {float(g.get('p_exact', g.get('p'))):.3f} "
                f"(bar {float(g['p_max']):.2f}) over {len(g.get('controls') or {})} controls"
                for g in gates if isinstance(g, Mapping) and "tau" in g]
        out.append(f"the stand-in tried for it, [{other}]({other}.md), "
                   + ("; ".join(said) if said else "has no gate"))
    return out


def _kind(c: Mapping[str, Any]) -> str:
    r = str(c.get("reason", ""))
    if "not run at this scale" in r:
        return "columns"
    if r.startswith("inconclusive at this scale (the stand-in") or r.startswith("untestable"):
        return "stand-in"
    if r.startswith(("not converged", "before the paper's horizon")):
        return "rounds"
    if r.startswith("a close call, not yet replicated"):
        return "replication"
    if r.startswith("did not replicate"):
        return "other"
    if "values" in c and c.get("kind") in ("above", "below", "within"):
        return "seeds"
    return "other"


def _hours(h: float | None) -> str:
    if h is None:
        return "(not estimated)"
    return f"{h:.1f} h" if h >= 0.1 else f"{60 * h:.0f} min"


def _gpu(h: float | None) -> str:
    return ("one GPU not estimated (no basis for this model)" if h is None else
            f"~{_hours(h)} on one GPU (an estimate)")


def _columns_need(v: Mapping[str, Any], base: Path, here: float,
                  gpu: Any, what: str, parts: tuple[str, ...]) -> Need:
    """The price of ``v``'s headline parts on columns not run (``here``: the committed run's
    hours; ``gpu``: hours here -> hours on one GPU). Where the runs stopped short of the
    paper's rounds a column is read before the horizon, so the columns decide only at the
    paper's rounds, the page's own columns run again."""
    h, g, n_cols = _columns_cost(str(v.get("name")), base)
    if not n_cols:
        return Need("columns", parts, None, None, (
            f"{what}: columns not run at this scale, not yet in "
            f"[{COST_TABLE}](../../{COST_TABLE}) (`python analysis/columns_cost.py "
            f"--only {v.get('name')}` measures them)."))
    stop = short_of_horizon(v.get("rounds"))
    if stop is None:
        return Need("columns", parts, h, g, (
            f"{what}: columns not run at this scale; the {n_cols} column(s) of "
            f"[{COST_TABLE}](../../{COST_TABLE}) cost {_hours(h)} here at `--jobs 2`, "
            f"{_gpu(g)}."))
    upto, horizon = stop
    f = horizon / upto
    h = (h + here) * f
    gh = gpu(here)
    g = None if g is None or gh is None else (g + gh) * f
    return Need("columns", parts, h, g, (
        f"{what}: columns not run at this scale; a column run to {upto} rounds is read "
        f"before the paper's horizon ({horizon}), so they decide only at {horizon} rounds: "
        f"the {n_cols} column(s) of [{COST_TABLE}](../../{COST_TABLE}) and the columns this "
        f"page ran, their {upto}-round hours x {f:.3g}, cost {_hours(h)} here at "
        f"`--jobs 2`, {_gpu(g)}."))


def price(v: Mapping[str, Any], md: str = "", root: str | Path | None = None
          ) -> list[Need]:
    """What would decide the undecided headline parts of the result ``v`` (its JSON), one
    :class:`Need` a kind; ``[]`` when the headline is decided. ``md`` is the result's
    Markdown (its setting table names the model), ``root`` the clone (for the cost table).
    """
    checks = [c for c in v.get("checks", []) if isinstance(c, Mapping)]
    heads = [c for c in checks if c.get("headline")] or checks
    undecided = [c for c in heads if c.get("outcome") == "inconclusive"]
    if not undecided or v.get("verdict") not in ("inconclusive at this scale", "partly"):
        return []
    try:  # the clone's cost tables; an installed package has none (the costs say so)
        base = Path(root) if root is not None else _root().parent
    except FigureError:
        base = Path("/nonexistent")
    seconds = float(v.get("seconds") or 0.0)
    here = seconds / 3600
    seeds = len(v.get("seeds") or []) or 1
    model = _model(md)
    ratio = GPU_RATIO.get(model or "")
    def gpu(h: float | None) -> float | None:
        return None if h is None or ratio is None else h / ratio

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in undecided:
        groups.setdefault(_kind(c), []).append(c)
    out = []
    for kind, cs in groups.items():
        parts = tuple(str(c.get("name")) for c in cs)
        k = len(cs)
        what = f"{k} headline part{'s' if k > 1 else ''}"
        if kind == "stand-in":
            known = _standin_costs(base).get(str(v.get("name")))
            costed = f"; {known['text']}" if known else " (not costed here)"
            tried = _standin_attempts(base, str(v.get("name")))
            if tried:
                costed += "; " + "; ".join(tried)
            out.append(Need(kind, parts, None, None, (
                f"{what}: the stand-in does not reproduce the paper's controls (its fidelity "
                "gate or calibration fails), so no added seed, round or column on it decides "
                "them: a stand-in that passes its gate (the searches of "
                "`analysis/standins_search.md`) or the paper's own data at `--full` does"
                f"{costed}.")))
        elif kind == "columns":
            out.append(_columns_need(v, base, here, gpu, what, parts))
        elif kind == "rounds":
            ran = [int(x) for x in (v.get("rounds") or {}).get("run") or []]
            paper = [int(x) for x in (v.get("rounds") or {}).get("paper") or []]
            short = ran and paper and min(r / p for r, p in zip(ran, paper)) < 1
            factor = max(p / r for r, p in zip(ran, paper)) if short else 2.0
            h = here * (factor - 1)
            where = ("to the paper's horizon" if short else
                     "one doubling of the rounds past the paper's horizon")
            out.append(Need(kind, parts, h, gpu(h), (
                f"{what}: read before the paper's horizon or on curves that still moved "
                f"over their window (a quarter of the horizon); {where} "
                f"costs about {_hours(h)} more here (the committed run's "
                f"{seconds:.0f} s x {factor - 1:.2g}), {_gpu(gpu(h))}, and more doublings "
                "until the curves flatten.")))
        elif kind == "replication":
            h = here * 3 / seeds
            out.append(Need(kind, parts, h, gpu(h), (
                f"{what}: a close call (its decisive bound within one standard error of its "
                "edge) stands only if 3 fresh seeds, declared before they run (the result's "
                "`[<name>.replication]` in `paper_figures/claims.toml`), agree: about "
                f"{_hours(h)} here, {_gpu(gpu(h))}.")))
        elif kind == "seeds":
            out += _seeds_needs(cs, seeds, here, gpu)
        else:
            out.append(Need(kind, parts, None, None, (
                f"{what}: undecided for a reason the page states (" +
                "; ".join(str(c.get("reason", ""))[:80] for c in cs) + ").")))
    return out


def _seeds_needs(cs: Sequence[Mapping[str, Any]], seeds: int, here: float,
                 gpu: Any) -> list[Need]:
    """The seeds need of the parts ``cs`` whose bounds cover their edge: one for the parts
    a number of seeds would decide (the most they need), one for those none would (their
    mean on an edge), so that a part of the second kind does not hide the price of the
    first."""
    need = [seeds_needed(c) for c in cs]
    out = []
    found = [(str(c.get("name")), n) for c, n in zip(cs, need) if n is not None]
    lost = tuple(str(c.get("name")) for c, n in zip(cs, need) if n is None)
    if found:
        k, most = len(found), max(n for _, n in found)
        h = here * max(most - seeds, 0) / seeds
        out.append(Need("seeds", tuple(p for p, _ in found), h, gpu(h), (
            f"{k} headline part{'s' if k > 1 else ''}: the 95 % bounds cover the claim's "
            f"edge; about {most} seeds (now {seeds}) would decide them if the seeds' mean "
            "and spread stayed as measured: "
            f"{most - seeds} more, about {_hours(h)} here, {_gpu(gpu(h))}.")))
    if lost:
        k = len(lost)
        out.append(Need("seeds", lost, None, None, (
            f"{k} headline part{'s' if k > 1 else ''}: the 95 % bounds cover the claim's "
            f"edge, and with the seeds' mean and spread as measured more than {_MAX_SEEDS} "
            "seeds would not decide them (the mean lies on an edge): no practical number of "
            "seeds does.")))
    return out


def price_section(needs: Sequence[Need], model: str | None = None) -> str:
    """The ``## What would decide it`` section of a result's Markdown ("" when ``needs`` is
    empty)."""
    if not needs:
        return ""
    lines = [f"- {n.text}" for n in needs]
    costed = [n.hours for n in needs if n.hours is not None]
    if len(costed) == len(needs):
        total = f"Compute alone would decide it: about {_hours(sum(costed))} more here"
    elif any(n.kind == "stand-in" for n in needs):
        total = ("No compute on this stand-in decides every part: the parts it does not "
                 "reproduce need a stand-in that passes its gate or the paper's data"
                 + (f"; the others cost about {_hours(sum(costed))} more here" if costed
                    else ""))
    else:
        total = ("Not every part is costed" + (f"; those that are cost about "
                                               f"{_hours(sum(costed))} more here"
                                               if costed else ""))
    shown = any(n.gpu_hours is not None for n in needs)
    ratio = GPU_RATIO.get(model or "")
    basis = (f" (one GPU: the hours here divided by {ratio:g}, the CPU / H100 time ratio of a "
             f"model comparable to {model}, measured on other machines: "
             "`topofl.figures.price.GPU_RATIO`)" if shown and ratio is not None else "")
    return ("## What would decide it\n\n" + "\n".join(lines) + "\n\n" + total + basis
            + f". Hours here are the committed run's recorded time, scaled; the cost table of "
            f"the columns left out is [{COST_TABLE}](../../{COST_TABLE}).\n\n")


_SECTION = "## What would decide it\n"


def apply(js: str | Path, md: str | Path, root: str | Path | None = None) -> list[Need]:
    """Write the price of the result ``js`` (its JSON) into it (``"price"``) and into its
    Markdown ``md`` (the ``## What would decide it`` section, before the fidelity gate or the
    setting), replacing an older one; a decided result loses both. Returns the needs."""
    import json

    js, md = Path(js), Path(md)
    v = json.loads(js.read_text(encoding="utf-8"))
    text = md.read_text(encoding="utf-8")
    needs = price(v, text, root)
    if _SECTION in text:
        a = text.index(_SECTION)
        b = text.index("\n## ", a + len(_SECTION)) + 1
        text = text[:a] + text[b:]
    section = price_section(needs, _model(text))
    if section:
        at = min(text.index(h) for h in ("## Fidelity gate\n", "## For a referee\n",
                                        "## Setting\n") if h in text)
        text = text[:at] + section + text[at:]
        v["price"] = [n.as_dict() for n in needs]
    else:
        v.pop("price", None)
    js.write_text(json.dumps(v, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md.write_text(text, encoding="utf-8")
    return needs
