"""Decentralized learning algorithms, each a short composition of the engine's pieces.

``ALGORITHMS`` maps a name to its factory; :func:`get_algorithm` builds one by name. Each
registered algorithm lives in the module of its name (``topofl.algorithms.dsgd``, ``.sgp`` ...);
the protocol they implement and the pieces they are built from are
:mod:`topofl.engine.protocol` and :mod:`topofl.engine.pieces`.

Examples
--------
>>> {'dsgd', 'sgp', 'osgp', 'dfedavgm', 'local', 'fedavg'} <= set(tf.algorithms.ALGORITHMS)
True
"""

from topofl.algorithms.adpsgd import adpsgd
from topofl.algorithms.apfl import apfl
from topofl.algorithms.base import (
    ALGORITHMS,
    get_algorithm,
    heterogeneous_epochs,
    register_algorithm,
)
from topofl.algorithms.choco import choco
from topofl.algorithms.dfedavgm import dfedavgm
from topofl.algorithms.dfedavgm_p import dfedavgm_p
from topofl.algorithms.dfedpgp import dfedpgp
from topofl.algorithms.dis_pfl import dis_pfl
from topofl.algorithms.ditto import ditto
from topofl.algorithms.dlm import dlm
from topofl.algorithms.dpfl import dpfl
from topofl.algorithms.dpfl_analysis import client_accuracy_stats, malicious_share
from topofl.algorithms.dsgd import dsgd
from topofl.algorithms.dsgt import dsgt
from topofl.algorithms.el import el
from topofl.algorithms.exact_diffusion import exact_diffusion
from topofl.algorithms.extra import extra
from topofl.algorithms.fedavg import fedavg
from topofl.algorithms.fedavg_ft import fedavg_ft
from topofl.algorithms.fedbabu import fedbabu
from topofl.algorithms.feddyn import feddyn
from topofl.algorithms.fednova import fednova
from topofl.algorithms.fedopt import fedopt
from topofl.algorithms.fedper import fedper
from topofl.algorithms.fedprox import fedprox
from topofl.algorithms.fedprox_ft import fedprox_ft
from topofl.algorithms.fedrep import fedrep
from topofl.algorithms.ggc import bggc, ggc
from topofl.algorithms.gossip_learning import gossip_learning
from topofl.algorithms.gt_saga import gt_saga
from topofl.algorithms.gt_sarah import gt_sarah
from topofl.algorithms.kgt import kgt
from topofl.algorithms.knn_per import knn_per
from topofl.algorithms.led import led
from topofl.algorithms.local import local
from topofl.algorithms.morph import morph
from topofl.algorithms.nids import nids
from topofl.algorithms.osgp import osgp
from topofl.algorithms.perfedavg import perfedavg
from topofl.algorithms.pfeddst import pfeddst, pfeddst_scores, pfeddst_select
from topofl.algorithms.pfedgraph import pfedgraph
from topofl.algorithms.private import with_dp_sgd, with_noisy_updates
from topofl.algorithms.proxskip import proxskip
from topofl.algorithms.scaffold import scaffold
from topofl.algorithms.sgp import sgp
from topofl.algorithms.teleport import teleport

__all__ = [
    "ALGORITHMS",
    "get_algorithm",
    "register_algorithm",
    "heterogeneous_epochs",
    "dsgd",
    "adpsgd",
    "gossip_learning",
    "dsgt",
    "extra",
    "exact_diffusion",
    "nids",
    "kgt",
    "led",
    "gt_saga",
    "gt_sarah",
    "proxskip",
    "dlm",
    "choco",
    "el",
    "dfedavgm",
    "local",
    "fedavg",
    "fedavg_ft",
    "fedprox",
    "fedprox_ft",
    "scaffold",
    "fedopt",
    "fednova",
    "feddyn",
    "sgp",
    "osgp",
    "dfedpgp",
    "dfedavgm_p",
    "fedper",
    "fedrep",
    "fedbabu",
    "ditto",
    "apfl",
    "perfedavg",
    "pfeddst",
    "pfeddst_scores",
    "pfeddst_select",
    "dpfl",
    "ggc",
    "bggc",
    "malicious_share",
    "client_accuracy_stats",
    "dis_pfl",
    "pfedgraph",
    "knn_per",
    "teleport",
    "morph",
    "with_dp_sgd",
    "with_noisy_updates",
]
