"""The facts a referee checks first on a result's page: the data that ran, the model's size,
how the labels fall on the clients.

:func:`facts` recomputes them from the page's own setting tables (``## Setting``: one table a
panel, a ``" / "`` between a row's values where a panel sweeps them): for every distinct
(data, model, clients, partition) that ran, the dataset is loaded as the run loaded it
(``topofl.data.load`` of the recorded spec), the model built for its input shape and classes
(``topofl.models.build_model``, its parameters counted with
``topofl.models.count_parameters``), and the data split over the clients with the run's
partition and its first seed (``topofl.data.federate``), whose per-client label counts give the
classes a client holds (min / median / max) and its training samples. :func:`apply` writes
them into the page (``## For a referee``) and its JSON (``"facts"``); ``topofl figure facts``
runs it over the committed results.

What the page cannot give (a setting it does not name, a partition it describes in words) is
said in the row, never guessed.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import topofl as tf
from topofl._utils.configfiles import read_config
from topofl._utils.markdown import table
from topofl.figures import referee
from topofl.figures.config import FigureError, _root

__all__ = ["facts", "apply", "SECTION"]

#: The heading of the facts' section in a result's Markdown.
SECTION = "## For a referee\n"

_KEYS = ("data", "n_clients", "partition", "partition_params", "model", "model_params",
         "seeds")


def _tables(md: str) -> list[tuple[str, dict[str, str]]]:
    """``(panel heading, {setting: value})`` of each table of the ``## Setting`` section."""
    if "## Setting\n" not in md:
        return []
    body = md.split("## Setting\n", 1)[1].split("\n## ", 1)[0]
    out: list[tuple[str, dict[str, str]]] = []
    heading = ""
    rows: dict[str, str] = {}
    for line in body.splitlines():
        if line.startswith("### "):
            if rows:
                out.append((heading, rows))
            heading, rows = line[4:].strip(), {}
        m = re.match(r"^\| ([^|]+?) \| ([^|]*?) \|$", line)
        if m and m.group(1) in _KEYS:
            rows[m.group(1)] = m.group(2).strip()
    if rows:
        out.append((heading, rows))
    return out


def _panels(rows: Mapping[str, str]) -> list[dict[str, str]]:
    """One dict a panel: the ``i``-th of a row's ``" / "`` values where it has one a panel."""
    split = {k: [x.strip() for x in v.split(" / ")] for k, v in rows.items()}
    n = max((len(v) for v in split.values()), default=1)
    return [{k: (v[i] if len(v) == n else " / ".join(v)) for k, v in split.items()}
            for i in range(n)]


def _kwargs(text: str) -> dict[str, Any] | None:
    """``key=value, ...`` of a setting row as keywords (``None`` when it is not that form)."""
    text = text.strip()
    if text in ("", "-"):
        return {}
    out: dict[str, Any] = {}
    for part in re.split(r",\s*(?=\w+=)", text):
        if "=" not in part:
            return None
        k, v = part.split("=", 1)
        try:
            out[k.strip()] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            out[k.strip()] = v.strip()
    return out


@functools.lru_cache(maxsize=16)
def _dataset(spec: str) -> Any:
    return tf.data.load(spec)


def _spread(values: Any) -> str:
    import numpy as np

    v = np.asarray(values)
    return f"{int(v.min())} / {float(np.median(v)):g} / {int(v.max())}"


def _one(panel: Mapping[str, str], configs: Mapping[str, Mapping[str, Any]]
         ) -> dict[str, Any]:
    """The facts of one panel (a row of the section's table); what cannot be recomputed from
    the page is said in its ``note``, never raised (the result is written already)."""
    try:
        return _recomputed(panel, configs)
    except (ValueError, TypeError, KeyError) as exc:
        data = panel.get("data", "")
        return {"data": data, "stand_in_for": None,
                "note": f"not recomputed from the page: {type(exc).__name__}: {exc}"[:300]}


def _model_params(model: str, data: str, configs: Mapping[str, Mapping[str, Any]]
                  ) -> tuple[dict[str, Any] | None, str]:
    """The ``model_params`` the result's configs give ``model`` where it ran on ``data`` (a
    config, its grid sections, each with its ``[stand_in]`` applied where the stand-in's data
    is the data that ran), and where they come from; ``(None, why)`` when the configs name
    none or several."""
    found: dict[str, list[str]] = {}
    for name, cfg in configs.items():
        base = {k: v for k, v in cfg.items() if k not in ("grid", "scale")}
        layers = [base] + [{**base, **sec} for axis in (cfg.get("grid") or {}).values()
                           if isinstance(axis, Mapping)
                           for sec in axis.values() if isinstance(sec, Mapping)]
        for eff in layers:
            st = eff.get("stand_in")
            if isinstance(st, Mapping) and st.get("data") == data:
                eff = {**eff, **st}
            if eff.get("data") == data and eff.get("model") == model:
                key = json.dumps(eff.get("model_params") or {}, sort_keys=True)
                found.setdefault(key, []).append(name)
    if len(found) == 1:
        (key, names), = found.items()
        return json.loads(key), f"configs/{sorted(set(names))[0]}.toml"
    if not found:
        return None, ("the page does not name the model's settings and no config of it "
                      "was found")
    return None, ("the configs give several: " + " / ".join(sorted(found)))


def _recomputed(panel: Mapping[str, str], configs: Mapping[str, Mapping[str, Any]]
                ) -> dict[str, Any]:
    data = re.sub(r"\s*\(offline stand-in for [^)]*\)\s*$", "", panel.get("data", "")).strip()
    stand = re.search(r"\(offline stand-in for ([^)]*)\)", panel.get("data", ""))
    row: dict[str, Any] = {"data": data, "stand_in_for": stand.group(1) if stand else None}
    try:
        ds = _dataset(data)
    except Exception as exc:  # noqa: BLE001 - a page's data that is not a loadable spec
        row["note"] = f"data not loadable here ({type(exc).__name__}): nothing recomputed"
        return row
    row["classes"] = int(ds.num_classes)
    model = panel.get("model", "").strip()
    if "model_params" in panel:  # the page names them
        params, source = _kwargs(panel["model_params"]), "the page's setting"
    elif model == "logistic":  # nothing to set
        params, source = {}, "none to set"
    else:
        params, source = _model_params(model, data, configs)
    if model and model != "-" and params is not None:
        m = tf.models.build_model(model, ds.input_shape, ds.num_classes, seed=0, **params)
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        row["model"] = model + (f" ({shown})" if shown else "")
        row["parameters"] = int(tf.models.count_parameters(m)["total"])
        row["model_params_from"] = source
    elif model and model != "-":
        row["model"] = model
        row["note"] = f"parameters not counted: {source}"
    scheme = panel.get("partition", "").split(",")[0].strip()
    p_params = _kwargs(panel.get("partition_params", "-"))
    try:
        n = int(panel.get("n_clients", ""))
    except ValueError:
        n = 0
    if scheme in tf.data.PARTITIONS and p_params is not None and n > 0:
        seeds = [int(s) for s in re.findall(r"\d+", panel.get("seeds", "0"))] or [0]
        p_params = dict(p_params)
        val = float(p_params.pop("val", 0.0))
        flip = float(p_params.pop("flip_labels", 0.0))
        fd = tf.data.federate(ds, scheme, n, seed=seeds[0], val=val, flip_labels=flip,
                              **p_params)
        counts = fd.label_distributions
        row["clients"] = n
        row["classes_per_client"] = _spread((counts > 0).sum(axis=1))
        row["samples_per_client"] = _spread(counts.sum(axis=1))
        row["split_seed"] = seeds[0]
    else:
        row["note"] = (f"partition {panel.get('partition', '-')!r} with "
                       f"{panel.get('partition_params', '-')!r} over "
                       f"{panel.get('n_clients', '-')} clients: not recomputed from the page")
    return row


def facts(md: str, stand_in: Mapping[str, str] | None = None,
          configs: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The facts of every distinct (data, model, clients, partition) of a result's setting
    tables (see the module); ``[]`` for a page without training data.

    Examples
    --------
    >>> md = ("## Setting\\n\\n| setting | value |\\n|---|---|\\n| data | digits |\\n"
    ...       "| n_clients | 10 |\\n| partition | pathological |\\n"
    ...       "| partition_params | classes_per_client=2 |\\n| model | logistic |\\n"
    ...       "| seeds | 0, 1, 2 |\\n\\n## Numbers\\n")
    >>> (f,) = tf.figures.facts.facts(md)
    >>> f["parameters"], f["classes_per_client"], f["clients"]
    (650, '2 / 2 / 2', 10)
    """
    out: list[dict[str, Any]] = []
    seen = set()
    for heading, rows in _tables(md):
        if "data" not in rows:
            continue
        for panel in _panels(rows):
            key = tuple(panel.get(k, "") for k in _KEYS)
            if key in seen:
                continue
            seen.add(key)
            row = _one(panel, configs or {})
            if row.get("stand_in_for") is None:  # the result's record of what stood in
                row["stand_in_for"] = _stood_in(row["data"], stand_in or {})
            out.append({"panel": heading, **row})
    return out


def _stood_in(data: str, stand_in: Mapping[str, str]) -> str | None:
    """The datasets ``data`` stands in for: those whose recorded stand-in is ``data``, else
    those whose stand-in is the same dataset with other options (a panel's own test size).

    Examples
    --------
    >>> from topofl.figures.facts import _stood_in
    >>> _stood_in("mnist1d:n_test=4", {"cinic10": "mnist1d:n_test=8"})
    'cinic10'
    >>> _stood_in("digits", {"cinic10": "mnist1d:n_test=8"}) is None
    True
    """
    exact = [k for k, v in stand_in.items() if v == data]
    same = [k for k, v in stand_in.items() if v.split(":")[0] == data.split(":")[0]]
    return ", ".join(exact or same) or None


def _ran_on(rows: list[dict[str, Any]], dataset: Any = None) -> str:
    """The header's line: the data that ran (a stand-in named as such) and the model's size;
    without rows, the result's ``dataset`` where it is synthetic (drawn by the script)."""
    if not rows and isinstance(dataset, str) and dataset.startswith("synthetic"):
        return (f"**Ran on:** {dataset}, drawn by the script (its setting says how); no data "
                "set is loaded.\n")
    if not rows:
        return "**Ran on:** no training data (graphs or counts alone).\n"
    seen: dict[str, None] = {}
    for r in rows:
        what = f"`{r['data']}`"
        if r.get("stand_in_for"):
            what += f" (offline stand-in for {r['stand_in_for']})"
        if "parameters" in r:
            what += f", {r.get('model')} of {r['parameters']:,} parameters"
        seen[what] = None
    return "**Ran on:** " + "; ".join(seen) + ".\n"


def _section(rows: list[dict[str, Any]], dataset: Any = None) -> str:
    if not rows and isinstance(dataset, str) and dataset.startswith("synthetic"):
        return (SECTION + f"\nNo data set is loaded: the data are {dataset}, drawn by the "
                "script as its setting says.\n\n")
    if not rows:
        return (SECTION + "\nNo training data: the result is computed from graphs or counts "
                "alone (its setting says which).\n\n")
    body = table(["panel", "data that ran", "stand-in for", "model", "parameters",
                  "model's settings from", "clients",
                  "classes a client holds (min / median / max)",
                  "training samples a client (min / median / max)"],
                 [[r.get("panel") or "-", f"`{r['data']}`", r.get("stand_in_for") or "-",
                   r.get("model", "-"), f"{r['parameters']:,}" if "parameters" in r else "-",
                   r.get("model_params_from", "-"), str(r.get("clients", "-")),
                   r.get("classes_per_client", "-"),
                   r.get("samples_per_client", "-")] for r in rows])
    notes = [f"- {r.get('panel') or r['data']}: {r['note']}" for r in rows if "note" in r]
    return (SECTION + "\nRecomputed from the setting tables below (`topofl figure facts`): the "
            "dataset loaded as the run loaded it, the model built for its input and classes, "
            "the split over the clients with the run's partition and first seed.\n\n" + body
            + "\n\n" + ("\n".join(notes) + "\n\n" if notes else ""))


def configs_of(name: str, results: Path) -> dict[str, dict[str, Any]]:
    """The config tables of result ``name``: ``configs/<name>.toml`` and
    ``configs/<name>_*.toml`` (not those of a longer result name), and the configs its script
    and the ``_*.py`` modules it imports name as a string; ``{}`` outside a clone."""
    try:
        root = _root()
    except FigureError:
        return {}
    folder = root / "configs"
    others = {p.stem for p in results.glob("*.json")} | {
        p.stem.removeprefix("fig_") for p in root.glob("fig_*.py")}
    longer = [o for o in others if o != name and o.startswith(name + "_")]
    stems = {p.stem for p in folder.glob("*.toml")}
    wanted = {s for s in stems if (s == name or s.startswith(name + "_"))
              and not any(s == o or s.startswith(o + "_") for o in longer)}
    script = root / f"fig_{name}.py"
    if script.is_file():
        text = script.read_text(encoding="utf-8")
        for mod in re.findall(r"^import (_\w+)", text, re.M):
            if (root / f"{mod}.py").is_file():
                text += (root / f"{mod}.py").read_text(encoding="utf-8")
        wanted |= {s for s in re.findall(r"[\"']([a-z0-9_]+)[\"']", text) if s in stems}
        fstrings = re.findall(r"\bf[\"']([a-z0-9_{}\[\]\w]*\{[^\"']*)[\"']", text)
        for pattern in [] if wanted else fstrings:
            # where no name was found: an f-string naming configs
            # (f"pfeddst_{DATASETS[d]}_{m}"), its fields read as any name
            rx = re.escape(re.sub(r"\{[^}]*\}", "\0", pattern)).replace("\0", "[a-z0-9_]+")
            wanted |= {s for s in stems if re.fullmatch(rx, s)}
    return {s: read_config(folder / f"{s}.toml") for s in sorted(wanted)}


def apply(js: str | Path, md: str | Path) -> list[dict[str, Any]]:
    """Write the facts of the result ``js``/``md`` into both (the section before ``##
    Setting``, replacing an older one), with its referee entry (:mod:`topofl.figures.referee`:
    reproduction summary, sources of the settings, the paper's numbers; a ``ValueError`` where
    the entry does not match the page); returns the facts."""
    js, md = Path(js), Path(md)
    text = md.read_text(encoding="utf-8")
    v = json.loads(js.read_text(encoding="utf-8"))
    rows = facts(text, v.get("stand_in") or {}, configs_of(js.stem, js.parent))
    text = re.sub(r"\n\*\*Ran on:\*\* [^\n]*\n\n", "\n", text, count=1)
    if text.startswith("# "):  # the header names what ran, stand-ins first
        end = text.index("\n") + 1
        text = text[:end] + "\n" + _ran_on(rows, v.get("dataset")) + text[end:]
    if SECTION in text:
        a = text.index(SECTION)
        b = text.index("\n## ", a + len(SECTION)) + 1
        text = text[:a] + text[b:]

    entry = referee.entries().get(js.stem)
    checked, unmatched = None, ""
    if entry is not None:
        try:
            checked = referee.check_entry(js.stem, entry, text, v.get("checks") or [])
        except ValueError as e:  # an entry describes the default scale's page
            if v.get("scale", "default") == "default":
                raise
            unmatched = str(e).split(": ", 1)[-1]
    at = text.index("## Setting\n") if "## Setting\n" in text else len(text)
    text = (text[:at] + _section(rows, v.get("dataset")) + referee.section(checked, unmatched)
            + text[at:])
    v["facts"] = rows
    v["referee"] = checked
    js.write_text(json.dumps(v, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md.write_text(text, encoding="utf-8")
    return rows
