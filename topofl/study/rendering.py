"""The study on paper: its figures (seed-averaged curves, one scatter per convergence metric)
and its ``study.md``, built with :class:`topofl._utils.markdown.Document`.

Everything here formats what :mod:`topofl.study.tables` and :mod:`topofl.study.statistics`
computed; no number is computed here.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from topofl import plotting
from topofl._utils.markdown import Document
from topofl._version import __version__
from topofl.records import Records
from topofl.study.names import MetricNames
from topofl.study.pairs import PAIR_METRICS
from topofl.study.result import StudyResult
from topofl.study.statistics import _EXACT_MAX, _MIN_BOOT_SEEDS

__all__ = ["readable_condition", "condition_names", "plain_ticks"]


#: Display names of graph families in figure legends.
_FAMILY_NAMES = {
    "dcliques": "D-Cliques", "connect_cliques": "cliques", "el_oracle": "EL-Oracle",
    "el_local": "EL-Local", "stl_fw": "STL-FW", "erdos_renyi": "Erdős–Rényi",
    "watts_strogatz": "Watts–Strogatz", "one_peer_exponential": "one-peer exponential",
    "random_directed_push": "random directed (push)",
}


def _readable_spec(spec: str) -> str:
    """``"dcliques:clique_size=10,inter=small_world"`` -> ``"D-Cliques (clique size 10, small
    world)"``: the family's display name, its parameters without underscores."""
    family, _, body = spec.partition(":")
    name = _FAMILY_NAMES.get(family, family.replace("_", " "))
    if not body:
        return name
    parts = []
    for item in body.split(","):
        key, eq, value = item.partition("=")
        value = value.replace("_", " ")
        parts.append(value if key in ("inter", "mode") or not eq
                     else f"{key.replace('_', ' ')} {value}")
    return f"{name} ({', '.join(parts)})"


def readable_condition(label: str) -> str:
    """A condition label as a figure shows it (the tables keep the exact label).

    ``key=value`` pairs lose their underscores; a ``topology`` spec becomes its family's name
    with its parameters; a lone ``topology`` key loses its name.

    Examples
    --------
    >>> from topofl.study.rendering import readable_condition
    >>> readable_condition("topology=dcliques:clique_size=10,inter=small_world")
    'D-Cliques (clique size 10, small world)'
    >>> readable_condition("partition=dirichlet, topology=el_local:s=3")
    'partition dirichlet, EL-Local (s 3)'
    """
    pairs = [p.partition("=") for p in label.split(", ")]
    if any(not eq for _, eq, _ in pairs):
        return label.replace("_", " ")
    if len(pairs) == 1 and pairs[0][0] == "topology":
        return _readable_spec(pairs[0][2])
    return ", ".join(_readable_spec(v) if k == "topology" else
                     f"{k.replace('_', ' ')} {v.replace('_', ' ')}" for k, _, v in pairs)


def _names(res: StudyResult) -> MetricNames:
    """The names of ``res``'s metrics (:mod:`topofl.study.names`): the given ones, else words
    with units; metrics in bytes in the unit their values call for."""
    metrics = [*res.topology_metrics, *res.convergence_metrics]
    return MetricNames.for_values(res.metric, res.target, res.metric_names,
                                  {m: res.runs[m].to_numpy(dtype=float) for m in metrics
                                   if m in res.runs.columns})


def _axis_label(metric: str) -> str:
    """A topology metric's name with its unit (:data:`topofl.study.names.METRIC_NAMES`)."""
    return MetricNames("", math.nan).label(metric)


def _convergence_label(c: str, res: StudyResult) -> str:
    return _names(res).label(c)


def _rho_text(row: Mapping[str, Any], holm: bool = False) -> str:
    """``ρ = 0.83 [0.67, 0.90], n = 8, p = 0.015`` (no interval without one; ``holm``: with
    the Holm-adjusted p)."""
    ci = ("" if math.isnan(row["ci_low"]) else
          f" [{_num(row['ci_low'], '.2f')}, {_num(row['ci_high'], '.2f')}]")
    return (f"ρ = {_num(row['spearman'], '.2f')}{ci}, n = {int(row['n_conditions'])}, "
            f"p = {_num(row['p_value'], '.2g')}"
            + (f" (Holm {_num(row['p_adjusted'], '.2g')})" if holm else ""))


def condition_names(labels: Sequence[str], given: Mapping[str, str]) -> dict[str, str]:
    """Condition label -> the one name figures, tables and prose show: its given name, else
    its readable label (:func:`readable_condition`), else, when two conditions would read
    alike, its label.

    Examples
    --------
    >>> from topofl.study.rendering import condition_names
    >>> condition_names(["topology=ring", "topology=torus", "lr=0_1", "lr=0 1"],
    ...                 {"topology=ring": "Ring"})
    {'topology=ring': 'Ring', 'topology=torus': 'torus', 'lr=0_1': 'lr=0_1', 'lr=0 1': 'lr=0 1'}
    """
    out = {c: given.get(c) or readable_condition(c) for c in labels}
    shown = list(out.values())
    return {c: (n if shown.count(n) == 1 or c in given else c) for c, n in out.items()}


def _display(res: StudyResult, condition: str) -> str:
    """A condition as ``study.md`` and the figures show it (:func:`condition_names`)."""
    return condition_names(list(res.conditions["condition"]), res.names)[condition]


def _save(fig: Any, out: Path, stem: str, formats: Sequence[str], dpi: int) -> list[Path]:
    paths = []
    for fmt in formats:
        path = out / f"{stem}.{fmt}"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        paths.append(path)
    return paths


def _figures(records: Records, res: StudyResult, out: Path, band: str,
             formats: Sequence[str] = ("png",)) -> tuple[dict[str, str], list[Path]]:
    """Draw ``curves`` and one ``scatter_<metric>`` per convergence metric into ``out``, in
    each of ``formats``; returns figure key -> file name of the first format (what
    ``study.md`` shows), and every file written.

    Every figure draws a condition in one style (:func:`topofl.plotting.condition_styles`,
    by the conditions' order) under its name (:func:`_display`); legends sit in a row of
    their own below the axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs: dict[str, str] = {}
    files: list[Path] = []
    names = _names(res)
    readable = {c: textwrap.fill(_display(res, str(c)), 40)
                for c in res.conditions["condition"]}
    styles = plotting.condition_styles(list(readable.values()))
    groups = {readable[c]: list(g["run"])
              for c, g in res.runs.groupby("condition", sort=False)}
    fig = plotting.seed_curves(
        records, groups, res.metric, band=band, ylabel=names.label(res.metric),
        title=f"{names.name(res.metric)}: mean over seeds, band = "
              + ("min..max over seeds" if band == "minmax" else "mean ± 1 std over seeds"),
        legend="below", styles=styles,
    )
    plain_ticks(fig)
    files += _save(fig, out, "curves", formats, 110)
    plt.close(fig)
    figs["curves"] = f"curves.{formats[0]}"
    if not res.topology_metrics:
        return figs, files
    corr = res.correlations.set_index(["topology_metric", "convergence_metric"])
    # Axis labels with units: the panels are named after the columns they read.
    axes = {t: textwrap.fill(names.label(t), 45) for t in res.topology_metrics}
    table = res.conditions.copy()
    table["label"] = [readable[c] for c in table["condition"]]
    for col in (*res.topology_metrics, *res.convergence_metrics):  # in the unit shown
        for part in ("mean", "std"):
            if f"{col}_{part}" in table.columns:
                table[f"{col}_{part}"] = table[f"{col}_{part}"] / names.scale(col)
    for c in res.convergence_metrics:
        renamed = table.rename(columns={f"{t}_{s}": f"{axes[t]}_{s}"
                                        for t in res.topology_metrics for s in ("mean", "std")})
        titles = {axes[t]: _rho_text(corr.loc[(t, c)], res.correction == "holm")
                  for t in res.topology_metrics}
        fig = plotting.metric_scatter(
            renamed, [axes[t] for t in res.topology_metrics], c, label="label", titles=titles,
            ylabel=textwrap.fill(names.label(c), 40), styles=styles,  # fits a panel's height
        )
        plain_ticks(fig)
        files += _save(fig, out, f"scatter_{c}", formats, 85)  # many panels
        plt.close(fig)
        figs[f"scatter_{c}"] = f"scatter_{c}.{formats[0]}"
    return figs, files


def plain_ticks(fig: Any) -> None:
    """No offset or power of ten above or beside an axis of ``fig`` (where a panel's title
    or the axis label is): every linear axis shows its values in full; a log axis keeps its
    own labels.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from topofl.study.rendering import plain_ticks
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0.9991, 0.9993], [2.6e8, 5.2e8])
    >>> plain_ticks(fig)
    >>> fig.canvas.draw()
    >>> ax.xaxis.get_offset_text().get_text(), ax.yaxis.get_offset_text().get_text()
    ('', '')
    >>> plt.close(fig)
    """
    from matplotlib.ticker import ScalarFormatter

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            fmt = axis.get_major_formatter()
            if isinstance(fmt, ScalarFormatter):
                fmt.set_useOffset(False)
                fmt.set_scientific(False)


def _num(v: Any, spec: str = ".4g") -> str:
    if v is None:
        return "–"
    f = float(v)
    if math.isnan(f):
        return "–"
    if math.isinf(f):
        return "never" if f > 0 else "-inf"
    return format(f, spec)


def _mean_std(row: Mapping[str, Any], col: str, scale: float = 1.0) -> str:
    """``mean ± std`` of ``col`` in ``row``, divided by ``scale`` (bytes in MB: 1e6)."""
    m, s = row.get(f"{col}_mean", math.nan) / scale, row.get(f"{col}_std", math.nan) / scale
    if col.endswith("_to_target") and math.isinf(m):
        reached = row.get("reached_mean", 0.0)
        k = round(reached * row["n_seeds"])
        return f"never in {row['n_seeds'] - k}/{row['n_seeds']} seeds"
    # no "± 0" for a metric equal in every seed (a deterministic graph)
    return _num(m) + ("" if s is None or math.isnan(s) or s == 0 else f" ± {_num(s, '.2g')}")


def _correlation_section(res: StudyResult, *, n_boot: int, seed: int) -> Document:
    """The correlation section: how to read it, a warning when nothing can be concluded, and
    one row per pair with rho, its seed interval, n, p and the conclusion; a single line
    instead when no correlation could be evidence (too few conditions)."""
    corr = res.correlations
    n_all = len(res.conditions)
    seeds = res.conditions["n_seeds"]
    if len(corr) and corr["conclusion"].isin(("undefined", "too few conditions")).all():
        defined = corr[corr["conclusion"] != "undefined"]
        if len(defined):
            n = int(defined["n_conditions"].max())
            why = (f"with n = {n} conditions even ρ = ±1 has p = "
                   f"{_num(float(defined['min_p'].min()), '.2g')} ≥ 0.05")
        else:
            why = f"a rank correlation needs at least 3 conditions (here {n_all})"
        return Document().paragraph(
            f"**Too few conditions to correlate:** {why}, so none of the {len(corr)} "
            "correlations (`correlations.csv`) is evidence; compare the conditions pairwise "
            "(above).")
    tested = int(corr["p_value"].notna().sum())
    doc = Document().paragraph(
        f"Spearman's ρ of the condition means ({n_all} conditions), with `n` the conditions "
        "it is computed over: a condition where the metric does not apply (not recorded, "
        "e.g. push-sum constants on an undirected graph) is left out, not correlated. `p`: "
        f"two-sided, exact (every ordering of the ranks enumerated) for n ≤ {_EXACT_MAX}, "
        f"scipy's t approximation above; {_correction_text(res, tested, 'correlations')}. "
        f"The {0.95:.0%} interval resamples the seeds within each "
        f"condition ({n_boot} draws, seed {seed}) and needs at least {_MIN_BOOT_SEEDS} seeds "
        "per condition. Accuracy-like columns: ρ > 0 means a larger metric goes with better "
        "learning; for rounds to target, ρ < 0 does.")
    if int(seeds.min()) < _MIN_BOOT_SEEDS:
        few = int((seeds < _MIN_BOOT_SEEDS).sum())
        doc.paragraph(f"**No seed intervals:** {few} of {n_all} conditions have fewer than "
                      f"{_MIN_BOOT_SEEDS} seeds (fewest: {int(seeds.min())}).")
    rows = []
    names, holm = _names(res), res.correction == "holm"
    for r in corr.to_dict("records"):
        ci = ("–" if math.isnan(r["ci_low"]) else
              f"[{_num(r['ci_low'], '.2f')}, {_num(r['ci_high'], '.2f')}]")
        n_txt = f"{int(r['n_conditions'])}" + (f" of {n_all}" if r["n_left_out"] else "")
        rows.append([names.name(r["topology_metric"]), names.name(r["convergence_metric"]),
                     _num(r["spearman"], ".2f"), ci, n_txt, _num(r["p_value"], ".2g")]
                    + ([_num(r["p_adjusted"], ".2g")] if holm else []) + [str(r["conclusion"])])
    return doc.table(["topology metric", "convergence", "ρ", f"{0.95:.0%} seed interval", "n",
                      "p", *(["p (Holm)"] if holm else []), "conclusion"], rows)


def _correction_text(res: StudyResult, tested: int, what: str) -> str:
    """Whether the ``tested`` tests of a section are corrected for their number, in words."""
    if res.correction == "holm":
        return (f"Holm–Bonferroni-corrected for the {tested} {what} tested (`p (Holm)`: the "
                "chance of any false positive among them is at most 5 %)")
    return (f"not corrected for the {tested} {what} tested (if nothing differed, up to "
            f"about {0.05 * tested:.2g} of them could pass at 5 % by chance; `--correction "
            "holm` corrects for them)")


# ---------------------------------------------------------------------------- pairs
#: The metrics of the one-line verdict per pair (the others are in the table).
_HEADLINE = ("final", "rounds_to_target")
#: Up to this many pairs, every pair has its verdict line and its table rows in study.md.
_MAX_PAIRS_SHOWN = 45
_DECIDED = ("A ahead", "B ahead")


def _points(res: StudyResult, metric: str) -> bool:
    """Whether differences of ``metric`` are shown in points (accuracy-like, x 100)."""
    return "acc" in res.metric and metric in ("final", "best", "auc")


def _amount(res: StudyResult, metric: str, value: float) -> str:
    """A difference of ``metric`` with its unit: ``2.3 points``, ``10 rounds``, ``3.1 MB``."""
    if _points(res, metric):
        return f"{value * 100:.1f} points"
    names = _names(res)
    unit = names.unit(metric)
    unit = "" if unit in ("", "as recorded") or metric in ("final", "best", "auc") else unit
    return f"{_num(value / names.scale(metric), '.3g')}" + (f" {unit}" if unit else "")


def _bound(res: StudyResult, metric: str, value: float) -> str:
    return (f"{value * 100:.1f}" if _points(res, metric)
            else _num(value / _names(res).scale(metric), ".3g"))


def _metric_name(res: StudyResult, metric: str) -> str:
    return _names(res).name(metric)


def _phrase(res: StudyResult, r: Mapping[str, Any]) -> str:
    """One pair, one metric, in words: who is ahead by how much, or that nothing is decided."""
    a, b = _display(res, r["condition_a"]), _display(res, r["condition_b"])
    metric = str(r["metric"])
    what = _metric_name(res, metric)
    n = int(r["n_pairs"])
    verdict = str(r["verdict"])
    if verdict in ("no common seeds", "too few seeds"):
        return f"{what}: {verdict} ({n} common)"
    if verdict == "equal in every seed":
        return f"{what}: equal in every seed ({n})"
    if verdict in _DECIDED:
        lead, other, p = ((a, b, r["p_a_better"]) if verdict == "A ahead"
                          else (b, a, r["p_b_better"]))
        every = r["a_every_seed"] if verdict == "A ahead" else r["b_every_seed"]
        tail = f"{'every seed' if every else 'not in every seed'}, {n} seeds, p = " \
               f"{_num(p, '.2g')}" + (f", Holm p = {_num(r['p_adjusted'], '.2g')}"
                                      if res.correction == "holm" else "")
        if r["test"] != "paired t":
            k = r["a_ahead"] if verdict == "A ahead" else r["b_ahead"]
            why = ("a run never reached the target" if r["test"] == "sign" else
                   "the same difference in every seed, no spread for a t test")
            return (f"{lead} ahead of {other} on {what} in {int(k)} of {n} seeds (sign test: "
                    f"{why}; {tail})")
        # the lead's advantage, positive: higher is better -> A - B, lower -> B - A
        flip = (1.0 if PAIR_METRICS[metric] else -1.0) * (1.0 if verdict == "A ahead" else -1.0)
        lo, hi = sorted((flip * r["ci_low"], flip * r["ci_high"]))
        fewer = "" if PAIR_METRICS[metric] else " fewer"
        by = _amount(res, metric, flip * r["mean_diff"])
        interval = f"[{_bound(res, metric, lo)}, {_bound(res, metric, hi)}]"
        return f"{lead} ahead of {other} on {what} by {by}{fewer} {interval} ({tail})"
    every = ""
    if r["a_every_seed"] or r["b_every_seed"]:
        every = f", although {a if r['a_every_seed'] else b} is ahead in every seed"
    return f"{what}: no difference decided at 95 % ({n} seeds{every})"


def _pairs_section(res: StudyResult) -> tuple[Document, Document]:
    """The verdicts at the top of ``study.md`` (one line per pair) and the pairwise table."""
    pairs = res.pairs
    top, table = Document(), Document()
    n_cond = len(res.conditions)
    if n_cond < 2 or not len(pairs):
        top.paragraph("One condition: nothing to compare.")
        return top, table
    keys = list(dict.fromkeys(zip(pairs["condition_a"], pairs["condition_b"])))
    by_pair = {k: g for k, g in pairs.groupby(["condition_a", "condition_b"], sort=False)}
    tested = int(pairs["p_adjusted"].notna().sum())
    rule = ("the Holm-adjusted two-sided p (twice the leader's one-sided p) < 0.05"
            if res.correction == "holm" else "the leader's one-sided p < 0.025")
    top.paragraph(
        "Runs with the same seed share their data split and initialisation, so each pair of "
        "conditions is compared seed by seed over the seeds both ran (a seed one of them "
        f"lacks does not count). Decided at 95 %: {rule} (no direction is claimed in "
        "advance); paired t on the differences, or a sign test when a run never reached the "
        f"target. The verdicts are {_correction_text(res, tested, 'comparisons')}.")
    shown = keys if len(keys) <= _MAX_PAIRS_SHOWN else [
        k for k in keys if by_pair[k]["verdict"].isin(_DECIDED).any()]
    lines = []
    for k in shown:
        g = by_pair[k]
        head = [r for r in g.to_dict("records") if r["metric"] in _HEADLINE]
        text = "; ".join(_phrase(res, r) for r in head) or "no headline metric"
        first = g.iloc[0]
        left = ""
        if first["only_a"] or first["only_b"]:
            left = (f" (common seeds {first['seeds']}; {int(first['only_a'])} seed(s) only in "
                    f"the first, {int(first['only_b'])} only in the second left out)")
        lines.append(f"**{_display(res, k[0])}** vs **{_display(res, k[1])}**{left}: {text}.")
    if lines:
        top.bullets(lines)
    if len(shown) < len(keys):
        top.paragraph(f"{len(keys) - len(shown)} of {len(keys)} pairs decide nothing on any "
                      "metric and are left out here; every pair is in `pairs.csv`.")
    rows = []
    names, holm = _names(res), res.correction == "holm"
    shown_rows = (pairs if len(keys) <= _MAX_PAIRS_SHOWN
                  else pairs[pairs["verdict"].isin(_DECIDED)])
    for r in shown_rows.to_dict("records"):
        metric = str(r["metric"])
        if r["test"] == "sign":
            diff = f"sign only: A {int(r['a_ahead'])}, B {int(r['b_ahead'])}, tied " \
                   f"{int(r['tied'])}"
            ci = "–"
        else:
            per = names.scale(metric)
            diff = _num(r["mean_diff"] / per, ".3g")
            ci = ("–" if math.isnan(r["ci_low"]) else
                  f"[{_num(r['ci_low'] / per, '.3g')}, {_num(r['ci_high'] / per, '.3g')}]")
        every = "A" if r["a_every_seed"] else "B" if r["b_every_seed"] else "–"
        seeds = str(int(r["n_pairs"])) + (
            f" (+{int(r['only_a'])} A, +{int(r['only_b'])} B unpaired)"
            if r["only_a"] or r["only_b"] else "")
        rows.append([_display(res, r["condition_a"]), _display(res, r["condition_b"]),
                     names.label(metric), str(r["better"]), seeds, diff, ci,
                     str(r["test"]), _num(r["p_a_better"], ".2g"),
                     _num(r["p_b_better"], ".2g")]
                    + ([_num(r["p_adjusted"], ".2g")] if holm else [])
                    + [every, str(r["verdict"])])
    table.paragraph(
        "A − B over the seeds both ran (paired by seed), its 95 % Student-t interval (n − 1 "
        "degrees of freedom), and one-sided p-values of \"A better\" and \"B better\" in each "
        "metric's good direction (`better`: higher accuracy; fewer rounds, messages, bytes, "
        "seconds). `sign`: a run never reached the target, so a difference is infinite: only "
        "the seeds where each is ahead count (exact binomial p over the seeds not tied). "
        "Values in the unit of each metric's name (accuracy as a fraction)"
        + ("; `p (Holm)`: the two-sided p (twice the smaller one-sided p) Holm-adjusted over "
           f"the {tested} comparisons tested." if holm else "."))
    if len(shown_rows) < len(pairs):
        table.paragraph(f"Only the {len(shown_rows)} decided rows of {len(pairs)} are shown "
                        "({} conditions); every row is in `pairs.csv`.".format(n_cond))
    if rows:
        table.table(["A", "B", "metric", "better", "seeds", "A − B", "95 % interval", "test",
                     "p (A better)", "p (B better)", *(["p (Holm)"] if holm else []),
                     "ahead in every seed", "verdict"], rows)
    return top, table


def _markdown(res: StudyResult, figs: Mapping[str, str], *, n_boot: int, seed: int, band: str,
              command: str | None = None) -> str:
    """The text of ``study.md``: the runs, the tables, the correlations, the figures
    (``figs``: figure key -> file name, as :func:`_figures` returns) and the definitions."""
    seeds = sorted({str(s) for s in res.runs["seed"]})
    names = _names(res)
    doc = Document().heading("Topology vs convergence")
    doc.paragraph((f"Generated by `{command}` " if command else "Generated ")
                  + f"with topofl {__version__}.")
    doc.paragraph(
        f"{len(res.runs)} runs in {len(res.conditions)} conditions (runs whose configs differ "
        f"only in `seed`; seeds {', '.join(seeds)}). Convergence is read from "
        f"{names.name(res.metric)} (`{res.metric}`); target {names.name(res.metric)} ≥ "
        f"{_num(res.target, '.4g')}.")
    if res.skipped:
        doc.paragraph(f"Left out (never recorded `{res.metric}`): "
                      + ", ".join(f"`{r}`" for r in res.skipped) + ".")
    kept = set(res.runs["run"])
    for title, items in (
            ("Left out, not finished", {r: w for r, w in res.incomplete.items()
                                        if r not in kept}),
            ("Kept although not finished", {r: w for r, w in res.incomplete.items()
                                            if r in kept}),
            ("Left out, unreadable", res.unreadable)):
        if items:
            doc.paragraph(f"{title}: " + "; ".join(f"`{k}` ({v})" for k, v in items.items())
                          + ".")
    if res.diverged:
        doc.paragraph("Diverged (kept: their curve stops at the divergence): "
                      + ", ".join(f"`{r}`" for r in res.diverged) + ".")
    shown = condition_names(list(res.conditions["condition"]), res.names)
    if any(name != c for c, name in shown.items()):
        doc.paragraph("Condition names (as the CSV files label them): " + "; ".join(
            f"**{name}** = `{c}`" for c, name in shown.items() if name != c) + ".")
    verdicts, pair_table = _pairs_section(res)
    doc.heading("Which condition is ahead (seed-paired)", 2)
    doc.extend(verdicts)
    rows = [[shown[str(r["condition"])], str(r["n_seeds"])]
            + [_mean_std(r, c, names.scale(c)) for c in res.convergence_metrics]
            for r in res.conditions.to_dict("records")]
    doc.heading("Convergence per condition (mean ± std over seeds)", 2)
    doc.table(["condition", "seeds", *map(names.label, res.convergence_metrics)], rows)
    if len(pair_table.text().strip()):
        doc.heading("Pairwise comparison (seed-paired)", 2)
        doc.extend(pair_table)
    if res.topology_metrics:
        rows = [[shown[str(r["condition"])]] + [_mean_std(r, t) for t in res.topology_metrics]
                for r in res.conditions.to_dict("records")]
        doc.heading("Topology metrics per condition (from the `graph.*` records)", 2)
        doc.table(["condition", *map(names.label, res.topology_metrics)], rows)
        doc.heading("Spearman rank correlation", 2)
        doc.extend(_correlation_section(res, n_boot=n_boot, seed=seed))
    else:
        doc.paragraph("No topology metric varies between conditions (or none was recorded: "
                      "run with `spectral=True`), so there is nothing to correlate.")
    if figs:
        doc.heading("Figures", 2)
        if "curves" in figs:
            doc.image(figs["curves"], "curves", caption=(
                f"{names.name(res.metric)} (`{res.metric}`) against rounds completed, mean "
                "over seeds; band: "
                + ("min..max over seeds" if band == "minmax" else "± one std over seeds") + "."))
        for c in res.convergence_metrics:
            if f"scatter_{c}" in figs:
                doc.image(figs[f"scatter_{c}"], names.name(c).replace("[", "(").replace("]", ")"))
        if any(k.startswith("scatter_") for k in figs):
            doc.caption("One point per condition (mean over seeds, bars ± one std; none when a "
                        "metric is equal in every seed); a run that never reached the target is "
                        "drawn as a hollow triangle at the top. Panel titles: Spearman's ρ of "
                        "the condition means, its seed interval, n and p"
                        + (" (and Holm's)." if res.correction == "holm" else "."))
        doc.blank()  # study.md has always had two blank lines here
    doc.extend(_definitions(res, names))
    return doc.text()


def _definitions(res: StudyResult, names: MetricNames) -> Document:
    """The definitions closing ``study.md``, the metrics' names in the CSV files among them."""
    metrics = [res.metric, *res.convergence_metrics, *res.topology_metrics]
    doc = Document().heading("Definitions", 2).bullets([
        "rounds to target: rounds completed when the metric first reached the target, "
        "counted from 1, at the evaluated rounds (`topofl.records.rounds_to`); never = ∞ "
        "(ranks last).",
        "messages, bytes, simulated seconds to target: what the run had sent (every node, "
        "every kind of message: the bytes ledger) or its virtual clock (`sim_time`, runs "
        "with a `network` only) at that round (`topofl.records.cost_to`); never = ∞.",
        "final, best: the metric at the last evaluation, and its largest value.",
        "area under the curve: trapezoidal area of the metric against rounds completed, "
        "divided by the rounds between the first and the last evaluation (the curve's mean "
        "height; `topofl.records.area_under_curve`).",
        "final consensus distance: mean squared distance of the shared parameters to their "
        "average at the last evaluation.",
        "topology metrics: the `graph.*` rows of `topofl.spectral.summary` (mean over the "
        "run's rows: the rounds of a time-varying graph).",
        "pairwise comparison: for two conditions A and B, the differences A − B of the runs "
        "with the same seed (`topofl.study.pairs`); the final consensus distance is not "
        "compared (smaller is not better learning).",
        "units: bytes in decimal kB, MB, GB (10³, 10⁶, 10⁹ B) as a column's name says; the "
        "CSV files keep bytes and the metrics' own names: "
        + "; ".join(f"{names.name(m)} = `{m}`" for m in metrics) + ".",
    ]).bullets([
        "values are compared at 10 significant digits: a metric equal in every seed but "
        "for float noise shows no spread and ties in the ranks.",
    ])
    doc.paragraph("Per-run values: `runs.csv`; per-condition means and stds: `conditions.csv`; "
                  "correlations with p-values: `correlations.csv`; seed-paired comparisons of "
                  "every pair of conditions: `pairs.csv`.")
    return doc
