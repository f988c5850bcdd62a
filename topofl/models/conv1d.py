"""A small 1-D convolutional network: the CNN stand-in for signals such as MNIST-1D."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from torch import nn

from topofl._utils.validation import check_int
from topofl.models._core import SplitModel, Stage, build_within_memory, min_size, trace_size
from topofl.models.inputs import check_shape

__all__ = ["cnn1d"]


def cnn1d(
    input_shape: int | Sequence[int] = (1, 40),
    num_classes: int = 10,
    *,
    channels: int = 25,
) -> SplitModel:
    """Three strided 1-D convolutions and a linear classifier, for 1-D signals (MNIST-1D).

    Parameters
    ----------
    input_shape : sequence of int, default ``(1, 40)``
        ``(channels, length)``, ``length >= 3``.
    num_classes : int, default 10
    channels : int, default 25
        Output channels of every convolution.

    Returns
    -------
    SplitModel
        ``body``::

            conv1 Conv1d(C, channels, 5, stride 2, padding 1) -> relu1
            conv2 Conv1d(channels, channels, 3, stride 2, padding 1) -> relu2
            conv3 Conv1d(channels, channels, 3, stride 2, padding 1) -> relu3 -> flatten

        ``head``: ``Linear(channels * l, num_classes)``, ``l`` the length after the three
        convolutions (5 for an input of 40 points: 40 -> 19 -> 10 -> 5).

    Notes
    -----
    The shape of the small CNN of the MNIST-1D reference (Greydanus 2020: three
    convolutions of 25 channels with stride 2, then one linear layer), which reaches
    about 94 % on MNIST-1D's 4000 training samples where logistic regression reaches about
    32 %. It has no normalisation layers and no buffers, so the engine evaluates all clients'
    copies at once under ``torch.func.vmap``. For ``(1, 40)``, 10 classes and 25 channels:
    3,950 body + 1,260 head = 5,210 parameters, about 0.2 MFLOP per sample forward.

    References
    ----------
    S. Greydanus, "Scaling Down Deep Learning" (2020), arXiv:2011.14439.

    Examples
    --------
    >>> import torch
    >>> m = tf.models.build_model("cnn1d", (1, 40), 10, seed=0)
    >>> m(torch.zeros(2, 1, 40)).shape
    torch.Size([2, 10])
    >>> tf.models.count_parameters(m)
    {'body': 3950, 'head': 1260, 'total': 5210}
    >>> tf.models.cnn1d((1, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cnn1d needs signals of at least 3 points, got 2 ...
    """
    shape = check_shape(input_shape, "input_shape", ndim=2, arch="cnn1d")
    num_classes = check_int(num_classes, "num_classes", low=1)
    width = check_int(channels, "channels", low=1)
    stages: tuple[Stage, ...] = ((5, 2, 1), (3, 2, 1), (3, 2, 1))
    out = trace_size(shape[1], stages)
    if out is None:
        raise ValueError(f"cnn1d needs signals of at least {min_size(stages)} points, got "
                         f"{shape[1]} "
                         f"(input_shape={shape}); use a flat model (logistic, mlp)")

    def make() -> SplitModel:
        body = nn.Sequential(
            OrderedDict(
                conv1=nn.Conv1d(shape[0], width, kernel_size=5, stride=2, padding=1),
                relu1=nn.ReLU(),
                conv2=nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1),
                relu2=nn.ReLU(),
                conv3=nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1),
                relu3=nn.ReLU(),
                flatten=nn.Flatten(),
            )
        )
        return SplitModel(body, nn.Linear(width * out, num_classes), arch="cnn1d",
                          input_shape=shape, num_classes=num_classes)

    return build_within_memory("cnn1d", make, input_shape=shape, num_classes=num_classes,
                               channels=width)
