"""Flat models: logistic regression and the multi-layer perceptron."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from torch import nn

from topofl._utils.validation import check_int
from topofl.models._core import SplitModel, build_within_memory, prod, with_linear_head
from topofl.models.inputs import check_shape

__all__ = ["logistic", "mlp"]


def logistic(input_shape: int | Sequence[int], num_classes: int) -> SplitModel:
    """Multinomial logistic regression: flatten, then one ``nn.Linear``.

    The model of the D-Cliques MNIST experiments (784 inputs, 10 classes).

    Parameters
    ----------
    input_shape : int or sequence of int
        Shape of one sample, any number of dimensions (``784``, ``(1, 28, 28)``, ``(1, 8, 8)``).
    num_classes : int
        Number of classes, ``>= 1``.

    Returns
    -------
    SplitModel
        ``body`` is ``nn.Flatten()`` and has **no parameters**; ``head`` is the whole model.
        A personalized algorithm that keeps the head on each client would therefore share
        nothing (it degenerates to local training), so the engine refuses such algorithms with
        this model; non-personalized algorithms (D-SGD, SGP, ...) train all of it.

    Notes
    -----
    ``prod(input_shape) * num_classes + num_classes`` parameters.

    References
    ----------
    A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques: Compensating for Data Heterogeneity
    with Topology in Decentralized Federated Learning", Section IV-A b).

    Examples
    --------
    >>> m = tf.models.build_model("logistic", (1, 8, 8), 10, seed=0)
    >>> m.body, m.head
    (Flatten(start_dim=1, end_dim=-1), Linear(in_features=64, out_features=10, bias=True))
    >>> tf.models.count_parameters(m)
    {'body': 0, 'head': 650, 'total': 650}
    """
    shape = check_shape(input_shape, "input_shape")
    num_classes = check_int(num_classes, "num_classes", low=1)
    return build_within_memory(
        "logistic",
        lambda: with_linear_head(nn.Flatten(), prod(shape), num_classes, arch="logistic",
                                 input_shape=shape),
        input_shape=shape, num_classes=num_classes,
    )


def mlp(
    input_shape: int | Sequence[int],
    num_classes: int,
    hidden: Sequence[int] = (200, 200),
) -> SplitModel:
    """Multi-layer perceptron: flatten, ``Linear -> ReLU`` per hidden width, then the head.

    Parameters
    ----------
    input_shape : int or sequence of int
        Shape of one sample, any number of dimensions.
    num_classes : int
        Number of classes, ``>= 1``.
    hidden : sequence of int, default ``(200, 200)``
        Widths of the hidden layers, at least one (use :func:`logistic` for none). The default
        is the 2NN of McMahan et al. (2017), "Communication-Efficient Learning of Deep Networks
        from Decentralized Data".

    Returns
    -------
    SplitModel
        ``body``: ``flatten, fc1, relu1, ..., fcK, reluK``; ``head``: ``Linear(hidden[-1],
        num_classes)``.

    Examples
    --------
    >>> m = tf.models.build_model("mlp", 64, 10, hidden=(32, 16), seed=0)
    >>> m.body
    Sequential(
      (flatten): Flatten(start_dim=1, end_dim=-1)
      (fc1): Linear(in_features=64, out_features=32, bias=True)
      (relu1): ReLU()
      (fc2): Linear(in_features=32, out_features=16, bias=True)
      (relu2): ReLU()
    )
    >>> tf.models.count_parameters(m)  # 64*32+32 + 32*16+16, 16*10+10
    {'body': 2608, 'head': 170, 'total': 2778}
    """
    shape = check_shape(input_shape, "input_shape")
    num_classes = check_int(num_classes, "num_classes", low=1)
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise TypeError(
            f"hidden must be a sequence of layer widths, got {type(hidden).__name__} {hidden!r}"
        )
    widths = [check_int(h, "hidden width", low=1) for h in hidden]
    if not widths:
        raise ValueError("hidden must contain at least one layer width, got (); use logistic")

    def make() -> SplitModel:
        layers: OrderedDict[str, nn.Module] = OrderedDict(flatten=nn.Flatten())
        d = prod(shape)
        for k, w in enumerate(widths, start=1):
            layers[f"fc{k}"] = nn.Linear(d, w)
            layers[f"relu{k}"] = nn.ReLU()
            d = w
        return with_linear_head(nn.Sequential(layers), d, num_classes, arch="mlp",
                                input_shape=shape)

    return build_within_memory("mlp", make, input_shape=shape, num_classes=num_classes,
                               hidden=tuple(widths))
