"""Figure configs: scales, offline stand-ins, seeds, grids of table cells, the papers' claims.

A figure's settings are config files ``paper_figures/configs/<name>.toml``: ``topofl run``
keys, an optional ``[sweep]`` table, overrides under ``[stand_in]`` (when the offline data
replaces the paper's) and ``[scale.quick]`` / ``[scale.default]`` / ``[scale.full]``, a
``seeds`` setting and free metadata under ``[figure]``, read by :func:`load_config`. A table's
config may hold one ``[grid.<axis>.<label>]`` table per value of each axis (:func:`grid`). The
paper's claim, the result's title and the notes that hold at every scale are in
``paper_figures/claims.toml`` (:func:`claim_of`).

**Seeds.** A training result runs every config over several seeds: ``seeds = 3`` (a count,
from the config's ``seed``, default 0) or ``seeds = [0, 1, 2]``, in the config's base, its
``[scale.<scale>]`` table or not at all: 3 seeds by default at the default and full scales and
one at ``--quick`` (:data:`DEFAULT_SEEDS`), whose numbers are then the seed-0 numbers of a
single run. The seed is the run's ``seed``: it draws the split of the data, a random graph
(D-Cliques' Greedy Swap, random regular graphs ...), the initial model and the batches, so two
curves of one seed share their split and initialisation. It does not change seeds an algorithm
takes as its own hyper-parameter (DPFL's ``graph_seed``) nor the seed inside a synthetic
dataset's spec (``synthetic:...,seed=0``: the dataset itself is fixed, as a real one is).

A real dataset the paper uses (MNIST, CIFAR-10, ...) is used whenever its files are present,
else its offline stand-in (:func:`stand_in`).
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from topofl import data
from topofl._utils.configfiles import read_config, split_sweep
from topofl.exceptions import ConfigError

__all__ = ["SCALES", "DEFAULT_SEEDS", "FigureError", "apply_scale", "stand_in", "load_config",
           "claim_of", "margin", "grid"]

SCALES = ("quick", "default", "full")
#: Seeds per config when the config says nothing (``seeds = N`` or a list overrides it).
DEFAULT_SEEDS = {"quick": 1, "default": 3, "full": 3}
_META = ("scale", "figure", "_notes", "_name", "_seeds", "_stand_in", "_label")


class FigureError(ValueError):
    """A figure cannot be found or run (no clone, unknown name, bad scale or setting)."""


#: The ``paper_figures/`` folder of the figure script running now (set by
#: :func:`topofl.figures.script` while it runs): a script reads the configs, claims and
#: results beside itself, not those of the clone the package was installed from.
SCRIPT_ROOT: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "topofl_figures_root", default=None)


#: The figures' configs and claims as the wheel installs them (``configs/*.toml`` and
#: ``claims.toml`` of ``paper_figures/``, copied there by ``pyproject.toml``'s
#: ``[tool.hatch.build.targets.wheel.force-include]``): absent from a clone.
INSTALLED_PRESETS = Path(__file__).resolve().parent / "paper"


def _root() -> Path:
    """``paper_figures/`` of the figure script running now (:data:`SCRIPT_ROOT`), else of the
    clone this package runs from."""
    beside = SCRIPT_ROOT.get()
    if beside is not None:
        return beside
    here = Path(__file__).resolve().parents[2] / "paper_figures"
    if not here.is_dir():
        raise FigureError(
            f"the figure scripts are not installed with the package; run from a clone of "
            f"the repository (looked for {here})")
    return here


def _presets_root() -> Path:
    """Where the configs and claims are read: ``paper_figures/`` of the running script or of
    the clone (:func:`_root`), else the copy the wheel installs (:data:`INSTALLED_PRESETS`),
    so that an installed topofl has the per-paper presets without the scripts and results."""
    try:
        return _root()
    except FigureError:
        if (INSTALLED_PRESETS / "claims.toml").is_file():
            return INSTALLED_PRESETS
        raise


# ------------------------------------------------------------------------------ scales, data


def apply_scale(cfg: Mapping[str, Any], scale: str) -> dict[str, Any]:
    """``cfg`` with its ``[scale.<scale>]`` overrides applied and the ``scale`` table removed.

    A key of the override table replaces the key of the config; a key under
    ``[scale.<scale>.sweep]`` replaces that list of the ``[sweep]`` table (a key moved from the
    base into the sweep or back is moved). Every scale has its optional table
    (``[scale.default]`` too: the config's base keys can then be the paper's setting).

    Raises
    ------
    FigureError
        For an unknown scale or a ``scale`` table that is not a table of tables.

    Examples
    --------
    >>> tf.figures.config.apply_scale({"rounds": 9, "sweep": {"lr": [0.1, 0.2]},
    ...                         "scale": {"quick": {"lr": 0.1}}}, "quick")
    {'rounds': 9, 'lr': 0.1}
    """
    if scale not in SCALES:
        raise FigureError(f"scale must be one of {SCALES}, got {scale!r}")
    out = {k: v for k, v in cfg.items() if k != "scale"}
    tables = cfg.get("scale", {})
    if not isinstance(tables, Mapping) or not all(isinstance(v, Mapping)
                                                  for v in tables.values()):
        raise FigureError(f"[scale] must hold tables [scale.quick] / [scale.full], got "
                          f"{tables!r}")
    unknown = set(tables) - set(SCALES)
    if unknown:
        raise FigureError(f"unknown scale table(s) {sorted(unknown)}: expected "
                          f"{', '.join(SCALES)}")
    over = dict(tables.get(scale, {}))
    sweep_over = over.pop("sweep", {})
    base, sw = split_sweep(out)
    for k, v in over.items():
        sw.pop(k, None)
        base[k] = v
    for k, v in dict(sweep_over).items():
        base.pop(k, None)
        sw[k] = list(v)
    if sw:
        base["sweep"] = sw
    return base


# dataset -> stand-in for (vector models, image models)
_STAND_INS = {
    "mnist": ("digits", "digits28"),
    "fashion_mnist": ("digits", "digits28"),  # where Debian's dataset-fashion-mnist is absent
    "femnist": ("digits", "digits28"),
    "cifar10": ("digits", "digits32rgb"),
    "cifar100": ("digits", "digits32rgb"),
    "cinic10": ("digits", "digits32rgb"),
}
_VECTOR_MODELS = ("logistic", "linear", "mlp")


def stand_in(dataset: str, model: str) -> str:
    """The offline dataset used in place of ``dataset`` for ``model`` when its files are absent.

    Vector models (logistic regression, MLP) take the 8x8 digits; the CNNs the digits resized to
    the paper's input shape (``digits28`` for MNIST-like, ``digits32rgb`` for CIFAR-like data).
    A dataset without a stand-in is returned unchanged. A config's ``[stand_in]`` table (or a
    grid entry's ``stand_in``) can name another one with its ``data`` key.

    Examples
    --------
    >>> from topofl.figures.config import stand_in
    >>> stand_in("cifar10", "gn_lenet"), stand_in("mnist", "logistic")
    ('digits32rgb', 'digits')
    """
    pair = _STAND_INS.get(dataset)
    if pair is None:
        return dataset
    return pair[0] if model in _VECTOR_MODELS else pair[1]


# the names the papers (and the results' check names) give their datasets, and a short name of
# each offline data set that stands in for them
_PAPER_NAMES = {"cifar100": "CIFAR-100", "cifar10": "CIFAR-10", "cinic10": "CINIC-10",
                "femnist": "FEMNIST", "fashion_mnist": "Fashion-MNIST", "mnist": "MNIST",
                "tiny_imagenet": "Tiny ImageNet"}
_STAND_IN_NAMES = {"mnist1d": "MNIST-1D", "mnist5k": "its 5,000-digit subset",
                   "synthetic": "a Gaussian mixture", "digits": "8x8 digits",
                   "digits16": "16x16 digits", "digits28": "28x28 digits",
                   "digits32rgb": "32x32 RGB digits", "digits_resized": "resized digits"}


def _mark_one(mark: str, match: re.Match[str]) -> str:
    return match[0] if match[0].startswith("[") else mark


def mark_stand_ins(text: str, swapped: Mapping[str, str]) -> str:
    """``text`` with each paper dataset name that ``swapped`` (a result's ``stand_in``:
    paper dataset -> the data that ran) replaced marked with what ran in its place, so that a
    check or a title does not say "CIFAR-10" where a stand-in ran. Idempotent.

    Examples
    --------
    >>> from topofl.figures.config import mark_stand_ins
    >>> s = mark_stand_ins("CIFAR-10 Dir-0.3: DFedPGP above Ditto; CIFAR-100 not run",
    ...                    {"cifar10": "mnist1d:n_samples=20000,seed=0"})
    >>> s
    'CIFAR-10 [stand-in: MNIST-1D] Dir-0.3: DFedPGP above Ditto; CIFAR-100 not run'
    >>> mark_stand_ins(s, {"cifar10": "mnist1d:seed=0"}) == s
    True
    >>> mark_stand_ins("MNIST: final mean", {"mnist": "mnist5k:seed=0"})
    'MNIST [stand-in: its 5,000-digit subset]: final mean'
    """
    for key, ran in swapped.items():
        paper = _PAPER_NAMES.get(str(key))
        if paper is None:
            continue
        base = str(ran).split(":", 1)[0]
        mark = f"{paper} [stand-in: {_STAND_IN_NAMES.get(base, base)}]"
        # a mark already there is matched whole and kept, so a name inside it stays too
        pattern = rf"\[stand-in: [^\]]*\]|(?<![\w-]){re.escape(paper)}(?![\w-])(?! \[stand-in)"
        text = re.sub(pattern, functools.partial(_mark_one, mark), text)
    return text


def mark_document(md: str, swapped: Mapping[str, str]) -> str:
    r"""A result's Markdown with :func:`mark_stand_ins` applied to the lines that say what was
    measured: the title, the **Measured** and **Verdict** lines and the rows of the table of
    checks (the paper's own claim, the settings and the notes keep the paper's names).

    Examples
    --------
    >>> from topofl.figures.config import mark_document
    >>> md = ("# Fig. 1 on CIFAR-10\n\n**Paper:** CIFAR-10 ...\n\n**Measured** CIFAR-10: 0.7\n\n"
    ...       "## Checks\n\n| check | m |\n|---|---|\n| CIFAR-10: A above B | 0.1 |\n\n"
    ...       "## Notes\n\n- CIFAR-10 files not found\n")
    >>> print(mark_document(md, {"cifar10": "mnist1d:seed=0"}))
    # Fig. 1 on CIFAR-10 [stand-in: MNIST-1D]
    <BLANKLINE>
    **Paper:** CIFAR-10 ...
    <BLANKLINE>
    **Measured** CIFAR-10 [stand-in: MNIST-1D]: 0.7
    <BLANKLINE>
    ## Checks
    <BLANKLINE>
    | check | m |
    |---|---|
    | CIFAR-10 [stand-in: MNIST-1D]: A above B | 0.1 |
    <BLANKLINE>
    ## Notes
    <BLANKLINE>
    - CIFAR-10 files not found
    <BLANKLINE>
    """
    if not swapped:
        return md
    out, section = [], ""
    for line in md.split("\n"):
        if line.startswith("## "):
            section = line
        marked = (line.startswith(("# ", "**Measured**", "**Verdict:**"))
                  or (section == "## Checks" and line.startswith("| ")))
        out.append(mark_stand_ins(line, swapped) if marked else line)
    return "\n".join(out)

def _available(dataset: str) -> bool:
    try:
        data.load(dataset)
    except (FileNotFoundError, OSError, ValueError):
        return False
    return True


def _swap_datasets(cfg: dict[str, Any], explicit: Any = None) -> list[str]:
    """Replace absent real datasets by their stand-ins (``explicit`` if given: the config's
    ``[stand_in]`` data), in the base and the sweep; record the swaps under ``_stand_in``;
    the notes."""
    notes: list[str] = []
    model = str(cfg.get("model", "logistic"))
    seen: dict[str, str] = {}

    def swap(name: Any) -> Any:
        if not isinstance(name, str) or name not in _STAND_INS:
            return name
        if name not in seen:
            other = str(explicit) if explicit is not None else stand_in(name, model)
            seen[name] = name if _available(name) else other
            if seen[name] != name:
                notes.append(
                    f"{name} files not found (see `topofl list datasets`): ran on the offline "
                    f"stand-in {seen[name]!r} instead; put the {name} files in place to run the "
                    f"paper's dataset")
        return seen[name]

    if "data" in cfg:
        cfg["data"] = swap(cfg["data"])
    sw = cfg.get("sweep", {})
    if isinstance(sw, dict) and "data" in sw:
        sw["data"] = [swap(v) for v in sw["data"]]
    cfg["_stand_in"] = {**dict(cfg.get("_stand_in", {})),
                        **{k: v for k, v in seen.items() if k != v}}
    return notes


def _seeds(setting: Any, base: Any, scale: str, where: str) -> list[int]:
    """The seeds of a config: ``setting`` (a count from ``base``, or a list), else the
    scale's default count."""
    start = 0 if base is None else base
    if isinstance(start, bool) or not isinstance(start, int):
        raise FigureError(f"{where}: seed must be an int, got {start!r}")
    if setting is None:
        setting = DEFAULT_SEEDS[scale]
    if isinstance(setting, int) and not isinstance(setting, bool):
        if setting < 1:
            raise FigureError(f"{where}: seeds must be a count >= 1 or a list of ints, got "
                              f"{setting}")
        return list(range(start, start + setting))
    if (isinstance(setting, (list, tuple)) and setting
            and all(isinstance(s, int) and not isinstance(s, bool) for s in setting)
            and len(set(setting)) == len(setting)):
        return list(setting)
    raise FigureError(f"{where}: seeds must be a count >= 1 or a non-empty list of distinct "
                      f"ints, got {setting!r}")


def load_config(name: str | os.PathLike[str], scale: str = "default") -> dict[str, Any]:
    """The config of a figure at a scale, with absent datasets swapped for their stand-ins and
    its seeds in the ``[sweep]`` table.

    Parameters
    ----------
    name : str or path
        A config name of ``paper_figures/configs/`` (``"dcliques_08"``) or the path of a file.
    scale : {"quick", "default", "full"}

    Notes
    -----
    The overrides apply in this order: the config's base keys (best written as the paper's
    setting), then its ``[stand_in]`` table when a real dataset was swapped for its offline
    stand-in (e.g. a smaller batch for the smaller local datasets; a ``data`` key there names
    the stand-in instead of :func:`stand_in`'s), then ``[scale.<scale>]``. The seeds
    (``seeds``: a count from the config's ``seed``, or a list; :data:`DEFAULT_SEEDS` when
    absent; ``--quick`` runs one seed unless ``[scale.quick]`` sets ``seeds``) become the
    last key of the ``[sweep]`` table, or the ``seed`` for one seed; a
    ``seed`` list in the ``[sweep]`` table is refused (write ``seeds``). At the full scale a
    config that names no ``device`` runs on ``"cuda"`` when torch sees a GPU (the paper's
    setting is meant for one), and on the CPU otherwise.

    Returns
    -------
    dict
        The run config with its ``[sweep]`` table; the metadata keys ``"figure"`` (the file's
        ``[figure]`` table, ``{}`` if none), ``"_name"`` (the file's stem), ``"_notes"`` (what
        was swapped), ``"_seeds"`` and ``"_stand_in"`` (paper dataset -> stand-in used) are
        removed again by :func:`~topofl.figures.runs.sweep`.

    Examples
    --------
    >>> cfg = tf.figures.load_config("dcliques_09_mnist", "quick")
    >>> cfg["_seeds"], cfg["seed"], "seed" in cfg["sweep"]
    ([0], 0, False)
    >>> tf.figures.load_config("dcliques_09_mnist")["sweep"]["seed"]
    [0, 1, 2]
    """
    p = Path(name)
    if p.suffix == "" and not p.exists():
        p = _presets_root() / "configs" / f"{name}.toml"
    raw = read_config(p)
    figure_meta = raw.pop("figure", {})
    if not isinstance(figure_meta, Mapping):
        raise ConfigError(f"{p}: [figure] must be a table, got {figure_meta!r}")
    stand_in_over = raw.pop("stand_in", {})
    if not isinstance(stand_in_over, Mapping):
        raise ConfigError(f"{p}: [stand_in] must be a table, got {stand_in_over!r}")
    scales = raw.pop("scale", {})
    base_seeds = raw.pop("seeds", None)
    notes = _swap_datasets(raw, stand_in_over.get("data"))
    adapted = {k: v for k, v in stand_in_over.items() if k != "data"}
    if notes and adapted:
        raw = apply_scale({**raw, "scale": {"default": adapted}}, "default")
        notes.append("settings adapted to the stand-in data ([stand_in] table of the config): "
                     + ", ".join(f"{k} = {_fmt(v)}" for k, v in adapted.items()))
    cfg = apply_scale({**raw, "scale": scales}, scale)
    ran, swapped = cfg.get("data"), raw.get("data")
    if isinstance(ran, str) and ran != swapped and swapped in cfg["_stand_in"].values():
        # the scale's table runs other data in place of the stand-in: record what ran
        cfg["_stand_in"] = {k: ran if v == swapped else v for k, v in cfg["_stand_in"].items()}
        notes.append(f"the {scale} scale runs {ran!r} in place of the stand-in {swapped!r}")
    if "seed" in cfg.get("sweep", {}):
        raise FigureError(f"{p}: the seeds of a figure are its `seeds` setting (a count or a "
                          "list), not a `seed` list in [sweep]")
    own = cfg.pop("seeds", None)  # the scale's own setting, else the base's (not for --quick)
    seeds = _seeds(own if own is not None else None if scale == "quick" else base_seeds,
                   cfg.get("seed"), scale, str(p))
    cfg.pop("seed", None)
    if len(seeds) == 1:
        cfg["seed"] = seeds[0]
    else:
        cfg["sweep"] = {**cfg.get("sweep", {}), "seed": seeds}
    if scale == "full" and "device" not in cfg and "device" not in cfg.get("sweep", {}):
        if torch.cuda.is_available():
            cfg["device"] = "cuda"
            notes.append("full scale on the GPU torch sees (device = \"cuda\")")
    cfg.update(figure=dict(figure_meta), _name=p.stem, _notes=notes, _seeds=seeds)
    return cfg


#: How many fresh seeds a close call needs, declared before they run
#: (:mod:`topofl.figures.replication`).
FRESH_SEEDS = 3


@dataclass(frozen=True)
class Replication:
    """The fresh seeds of a result, declared before they ran (``claims.toml``
    ``[<name>.replication]``): ``fresh`` the seeds, ``declared`` when and what had been seen
    (the rule that reads them: :mod:`topofl.figures.replication`).

    Examples
    --------
    >>> tf.figures.replication.Replication((3, 4, 5), "2026-11-28, before the fresh runs").fresh
    (3, 4, 5)
    >>> tf.figures.replication.Replication((3, 3, 4), "x")
    Traceback (most recent call last):
    ...
    ValueError: a replication needs 3 distinct fresh seeds, got (3, 3, 4)
    """

    fresh: tuple[int, ...]
    declared: str

    def __post_init__(self) -> None:
        if len(set(self.fresh)) < FRESH_SEEDS or len(set(self.fresh)) != len(self.fresh) \
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in self.fresh):
            raise ValueError(f"a replication needs {FRESH_SEEDS} distinct fresh seeds, got "
                             f"{self.fresh!r}")
        if not isinstance(self.declared, str) or not self.declared.strip():
            raise ValueError("a replication must say when its fresh seeds were declared "
                             f"(declared = \"...\"), got {self.declared!r}")


def claim_of(name: str, claims: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """``{"title", "claim", "notes"}`` of the figure ``name`` from ``paper_figures/claims.toml``
    (one table per figure: its result's title, the paper's claim as the script reads it, and
    the notes that hold at every scale).

    Raises
    ------
    FigureError
        When the file has no table for ``name`` or the table lacks a title or a claim.

    Examples
    --------
    >>> c = tf.figures.claim_of("dcliques_05")  # a table with a title and a claim only
    >>> sorted(c), c["title"].split(":")[0]
    (['claim', 'margins', 'notes', 'title'], 'D-Cliques Fig. 5')

    ``margins`` maps a kind of quantity (``accuracy``, ``spread`` ...) to ``{"value",
    "reason"}``: the file's ``[margins]`` table, updated by the figure's own
    ``[<name>.margins]`` (:func:`margin`). Where the table has them, ``second_look`` lists
    what was added after the results were seen (seeds, rounds; named on the verdict line) and
    ``replication`` is the :class:`~topofl.figures.replication.Replication` of a close call
    (its fresh seeds, declared before they ran).
    """
    path = Path(claims) if claims is not None else _presets_root() / "claims.toml"
    table_ = read_config(path)
    entry = table_.get(name)
    if not isinstance(entry, Mapping):
        raise FigureError(f"{path} has no table [{name}] with the figure's title and claim")
    notes = entry.get("notes", [])
    if (not isinstance(entry.get("title"), str) or not isinstance(entry.get("claim"), str)
            or not isinstance(notes, list)):
        raise FigureError(f"{path}: [{name}] needs a title and a claim (strings) and "
                          f"optional notes (a list of strings), got {dict(entry)!r}")
    margins: dict[str, dict[str, Any]] = {}
    for where, block in (("[margins]", table_.get("margins", {})),
                         (f"[{name}.margins]", entry.get("margins", {}))):
        if not isinstance(block, Mapping):
            raise FigureError(f"{path}: {where} must be a table of margins, got {block!r}")
        for key, m in block.items():
            ok = (isinstance(m, Mapping) and isinstance(m.get("reason"), str)
                  and isinstance(m.get("value"), (int, float))
                  and not isinstance(m.get("value"), bool) and m["value"] >= 0)
            if not ok:
                raise FigureError(f"{path}: {where} {key} must be {{value = a number >= 0, "
                                  f"reason = \"...\"}}, got {m!r}")
            margins[str(key)] = {"value": float(m["value"]), "reason": str(m["reason"]).strip()}
    second = entry.get("second_look", [])
    if not isinstance(second, list) or not all(isinstance(x, str) for x in second):
        raise FigureError(f"{path}: [{name}] second_look must be a list of strings (what was "
                          f"added after the results were seen, and why), got {second!r}")
    out = {"title": entry["title"], "claim": entry["claim"].strip(),
           "notes": [str(n).strip() for n in notes], "margins": margins}
    if second:
        out["second_look"] = [" ".join(x.split()) for x in second]
    rep = entry.get("replication")
    if rep is not None:
        ok = (isinstance(rep, Mapping) and isinstance(rep.get("fresh"), list)
              and set(rep) <= {"fresh", "declared"})
        try:
            if not ok:
                raise ValueError("it needs fresh = [3 seeds] and declared = \"...\" only")
            out["replication"] = Replication(tuple(rep["fresh"]), str(rep.get("declared", "")))
        except ValueError as e:
            raise FigureError(f"{path}: [{name}.replication] {e}, got {rep!r}") from None
    return out


#: The kinds of margin each figure's checks looked up (:func:`margin`): its result lists these.
MARGINS_USED: dict[str, set[str]] = {}


def margin(name: str, kind: str = "accuracy", claims: str | os.PathLike[str] | None = None
           ) -> float:
    """The practical margin of the checks of figure ``name`` on quantities of ``kind``, from
    ``paper_figures/claims.toml`` (the figure's ``[<name>.margins]``, else ``[margins]``): a
    difference smaller than it is a tie (:func:`~topofl.figures.above`). Each margin is stated
    once there with its reason, and every result lists those that apply to it.

    Raises
    ------
    FigureError
        When neither table states a margin of ``kind``.

    Examples
    --------
    >>> tf.figures.margin("dcliques_09", "accuracy")
    0.01
    """
    found = claim_of(name, claims)["margins"]
    MARGINS_USED.setdefault(name, set()).add(kind)
    if kind not in found:
        raise FigureError(f"no margin of kind {kind!r} for {name} in claims.toml (its "
                          f"[{name}.margins] or [margins]); stated: {sorted(found)}")
    return float(found[kind]["value"])


def _clean(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The run config of a figure's config: without the metadata keys :func:`load_config` and
    :func:`grid` add."""
    return {k: v for k, v in cfg.items() if k not in _META}


def _fmt(v: Any) -> str:
    """A config value as a result's Markdown shows it (floats to 4 significant digits)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) or "-"
    return "-" if v is None else str(v)


# ------------------------------------------------------------------------------ grids of cells


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", label).strip("_") or "cell"


def grid(cfg: Mapping[str, Any], *, keep: Mapping[str, Sequence[str]] | None = None
         ) -> dict[tuple[str, ...], dict[str, Any]]:
    """The run configs of a table's cells: one per combination of ``[grid.<axis>.<label>]``.

    A paper's table compares methods (each with its own hyper-parameters, so one ``[sweep]``
    over ``algorithm`` cannot hold them) under several settings (a Dirichlet and a pathological
    split ...). Its config keeps the keys every cell shares as base keys, and one table per
    value of each axis::

        [grid.method.DFedPGP]
        algorithm = "dfedpgp"
        local_epochs_u = 5

        [grid.split."Dir-0.3"]
        partition = "dirichlet"
        partition_params = { alpha = 0.3 }

    A cell's config is the base updated by its entry of every axis, in the order the axes are
    written (a later axis wins a shared key). An entry may name its own ``data`` with a
    ``stand_in`` table (``data`` of the stand-in and the settings that change with it), used
    when that dataset's files are absent, as the config's ``[stand_in]`` is for the base.
    ``grid_keep = { axis = [labels] }`` (a base key, e.g. under ``[scale.default]``) or
    ``keep`` keeps only some labels of an axis, in the order given.

    Parameters
    ----------
    cfg : mapping
        A config from :func:`load_config`.
    keep : mapping of axis to labels, optional
        Overrides ``grid_keep`` for the axes it names.

    Returns
    -------
    dict
        ``(label of each axis) -> config`` (with the ``[sweep]`` table, ``_name`` set to
        ``<stem>/<cell>`` and ``_notes`` extended by what the cell swapped), ready for
        :func:`~topofl.figures.panels`.

    Raises
    ------
    FigureError
        A config without a grid, an axis that is not a table of tables, or an unknown label
        in ``keep``.

    Examples
    --------
    >>> cfg = {"rounds": 5, "_name": "t", "_notes": [],
    ...        "grid": {"method": {"A": {"lr": 0.1}, "B": {"lr": 0.2}},
    ...                 "split": {"iid": {"partition": "iid"}}}}
    >>> cells = tf.figures.grid(cfg, keep={"method": ["B"]})
    >>> list(cells), cells[("B", "iid")]["lr"], cells[("B", "iid")]["_name"]
    ([('B', 'iid')], 0.2, 't/B/iid')
    """
    axes = cfg.get("grid")
    if not isinstance(axes, Mapping) or not axes:
        raise FigureError("this config has no [grid.<axis>.<label>] tables")
    wanted = dict(cfg.get("grid_keep") or {})
    wanted.update(keep or {})
    unknown_axes = set(wanted) - set(axes)
    if unknown_axes:
        raise FigureError(f"grid_keep names unknown axes {sorted(unknown_axes)}; axes: "
                          f"{list(axes)}")
    labels: list[list[str]] = []
    for axis, entries in axes.items():
        if not isinstance(entries, Mapping) or not all(isinstance(e, Mapping)
                                                       for e in entries.values()):
            raise FigureError(f"[grid.{axis}] must hold one table per label, got {entries!r}")
        names = list(entries)
        if axis in wanted:
            missing = [x for x in wanted[axis] if x not in entries]
            if missing:
                raise FigureError(f"grid axis {axis!r} has no label(s) {missing}; labels: "
                                  f"{names}")
            names = list(wanted[axis])
        labels.append(names)
    base = {k: v for k, v in cfg.items() if k not in ("grid", "grid_keep")}
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for combo in itertools.product(*labels):
        out[tuple(combo)] = _cell(base, axes, combo)
    return out


def _cell(base: Mapping[str, Any], axes: Mapping[str, Any], combo: Sequence[str]
          ) -> dict[str, Any]:
    """The config of one cell of :func:`grid`."""
    run = dict(base)
    run["_notes"] = list(base.get("_notes", []))
    stand: dict[str, Any] = {}
    data_set = False
    for axis, label in zip(axes, combo):
        entry = dict(axes[axis][label])
        stand.update(entry.pop("stand_in", {}))
        data_set = data_set or "data" in entry
        run.update(entry)
    if data_set:
        notes = _swap_datasets(run, stand.get("data"))
        adapted = {k: v for k, v in stand.items() if k != "data"}
        if notes and adapted:
            run.update(adapted)
            notes.append("settings adapted to the stand-in data: "
                         + ", ".join(f"{k} = {_fmt(v)}" for k, v in adapted.items()))
        run["_notes"] += [n for n in notes if n not in run["_notes"]]
    run["_name"] = "/".join([str(base.get("_name", "grid"))] + [_slug(x) for x in combo])
    return run

