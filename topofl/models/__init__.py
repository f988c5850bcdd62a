"""Small classifiers that split into a shared *body* and a personal *head*.

Every model is a :class:`SplitModel`, a plain ``nn.Module`` with two submodules::

    forward(x) = head(body(x))      x: [B, *input_shape] -> [B, num_classes]

where ``head`` is the last ``nn.Linear``. Personalized algorithms (DFedPGP, PFedDST, FedPer,
FedRep, ...) gossip the body and keep the head on each client; :func:`split_parameters` gives
the two lists of parameter names, in ``named_parameters()`` order, and accepts an explicit
``head=[...]`` for any other ``nn.Module``. :func:`~topofl.models.logistic` has an empty body:
it has nothing to share, so personalizing its head personalizes the whole model.

The models have no buffers (GroupNorm, never BatchNorm), no in-place operations and no
data-dependent control flow, so the engine evaluates all clients at once with
``torch.func.functional_call`` and ``torch.func.vmap(torch.func.grad(loss))`` over parameters
stacked as ``[n_clients, *shape]``; the tests check that this gives the per-client autograd
gradients.

Constructors (``logistic``, ``mlp``, ``gn_lenet``, ``cnn``, ``cnn1d``, ``resnet18_gn``) build
modules with PyTorch's default initialisation, drawn from the global torch RNG like any
``nn.Module``.
For reproducible runs use :func:`build_model` with its required ``seed``: it initialises from
``seed`` alone and leaves the global RNG state as it found it.

Examples
--------
>>> import torch
>>> model = tf.models.build_model("cnn", (3, 32, 32), 10, seed=0)
>>> body, head = tf.models.split_parameters(model)
>>> head
['head.weight', 'head.bias']
>>> tf.models.count_parameters(model)
{'body': 61156, 'head': 850, 'total': 62006}
>>> sorted(tf.models.MODELS)
['cnn', 'cnn1d', 'gn_lenet', 'logistic', 'mlp', 'resnet18_gn']
"""

from topofl.models._core import SplitModel, count_parameters, flops_per_sample, split_parameters
from topofl.models._registry import MODELS, build_model, register_model, unregister_model
from topofl.models.conv1d import cnn1d
from topofl.models.inputs import check_model_input
from topofl.models.lenet import cnn, gn_lenet
from topofl.models.linear import logistic, mlp
from topofl.models.resnet import resnet18_gn

__all__ = [
    "SplitModel",
    "split_parameters",
    "count_parameters",
    "flops_per_sample",
    "check_model_input",
    "MODELS",
    "build_model",
    "register_model",
    "unregister_model",
    "logistic",
    "mlp",
    "gn_lenet",
    "cnn",
    "cnn1d",
    "resnet18_gn",
]
