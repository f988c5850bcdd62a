"""LeNet-style convolutional networks: the GN-LeNet of D-Cliques and the simple CNN of DPFL."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from torch import nn

from topofl._utils.validation import check_choice, check_int
from topofl.models._core import (
    SplitModel,
    Stage,
    build_within_memory,
    check_spatial,
    with_linear_head,
)
from topofl.models.inputs import check_shape

__all__ = ["gn_lenet", "cnn"]

# (kernel, stride, padding) of gn_lenet's trunk: three (conv 5x5 pad 2, max-pool 3 stride 2).
_GN_LENET_STAGES: tuple[Stage, ...] = ((5, 1, 2), (3, 2, 0)) * 3
# cnn's trunk: two (conv 5x5 without padding, max-pool 2 stride 2).
_CNN_STAGES: tuple[Stage, ...] = ((5, 1, 0), (2, 2, 0)) * 2

# widths of DPFL's simple CNN: (conv1, conv2) channels and (fc1, fc2) units.
_CNN_VARIANTS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "cifar10": ((6, 16), (120, 84)),  # Appendix F.3.2
    "femnist": ((4, 12), (120, 100)),  # Appendix F.4.2
}


def gn_lenet(
    input_shape: int | Sequence[int] = (3, 32, 32),
    num_classes: int = 10,
    *,
    num_groups: int = 2,
) -> SplitModel:
    """Group-Normalised LeNet, the CIFAR-10 model of the D-Cliques experiments.

    Three convolutional blocks (32, 32, 64 channels, 5x5 kernels with padding 2, each with a
    3x3 max-pooling of stride 2, GroupNorm and ReLU) and one linear classifier.

    Parameters
    ----------
    input_shape : sequence of int, default ``(3, 32, 32)``
        ``(channels, height, width)``; height and width at least 15 (each pooling needs 3
        pixels). ``(1, 28, 28)`` (MNIST) works, ``(1, 8, 8)`` does not.
    num_classes : int, default 10
    num_groups : int, default 2
        Groups of every GroupNorm (must divide 32).

    Returns
    -------
    SplitModel
        ``body``::

            conv1 Conv2d(C, 32, 5, padding=2)  -> pool1 MaxPool2d(3, 2) -> norm1 GroupNorm -> relu1
            conv2 Conv2d(32, 32, 5, padding=2) -> norm2 GroupNorm -> pool2 MaxPool2d(3, 2) -> relu2
            conv3 Conv2d(32, 64, 5, padding=2) -> norm3 GroupNorm -> pool3 MaxPool2d(3, 2) -> relu3
            flatten

        (each GroupNorm with ``num_groups`` groups).

        ``head``: ``Linear(64 * h * w, num_classes)`` with ``h = w = 3`` for 32x32 inputs
        (576 features), 2 for 28x28.

    Notes
    -----
    The D-Cliques paper (Section IV-A b) only says "a Group-Normalized variant of LeNet [Hsieh
    et al. 2020]" reaching 74.15% centralized accuracy. The layers above are those of the
    GN-LeNet in the D-Cliques authors' simulator, whose docstring points to the ``gnlenet``
    Caffe definition of Hsieh et al. (``kevinhsieh/non_iid_dml``,
    ``apps/caffe/examples/cifar10/*/gnlenet_train_val.prototxt.template``): same widths,
    kernels, paddings, pooling windows and layer order. That Caffe definition differs in
    three details, which topofl does not follow: its convolutions have no bias, its 2nd and
    3rd poolings average instead of taking the max, and its GroupNorm has 1 group in the
    single-partition runs (2 in the partitioned ones). Initialisation is PyTorch's default
    (the Caffe file uses Gaussian fillers). For 3x32x32 inputs and 10 classes: 79,584 body and
    5,770 head parameters (85,354 in all).

    References
    ----------
    A. Bellet, A.-M. Kermarrec, E. Lavoie, "D-Cliques", Section IV-A b). K. Hsieh, A. Phanishayee,
    O. Mutlu, P. B. Gibbons, "The Non-IID Data Quagmire of Decentralized Machine Learning",
    ICML 2020.

    Examples
    --------
    >>> import torch
    >>> m = tf.models.build_model("gn_lenet", (3, 32, 32), 10, seed=0)
    >>> m(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 10])
    >>> tf.models.count_parameters(m)
    {'body': 79584, 'head': 5770, 'total': 85354}
    >>> tf.models.gn_lenet((1, 8, 8))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: gn_lenet needs inputs of at least 15x15 pixels, got 8x8 ...
    """
    shape = check_shape(input_shape, "input_shape", ndim=3, arch="gn_lenet")
    num_classes = check_int(num_classes, "num_classes", low=1)
    num_groups = check_int(num_groups, "num_groups", low=1)
    if 32 % num_groups:
        raise ValueError(f"num_groups must divide 32 (the channels of conv1), got {num_groups}")
    h, w = check_spatial("gn_lenet", shape, _GN_LENET_STAGES)

    def make() -> SplitModel:
        c = shape[0]
        body = nn.Sequential(
            OrderedDict(
                conv1=nn.Conv2d(c, 32, kernel_size=5, stride=1, padding=2),
                pool1=nn.MaxPool2d(kernel_size=3, stride=2),
                norm1=nn.GroupNorm(num_groups, 32),
                relu1=nn.ReLU(),
                conv2=nn.Conv2d(32, 32, kernel_size=5, stride=1, padding=2),
                norm2=nn.GroupNorm(num_groups, 32),
                pool2=nn.MaxPool2d(kernel_size=3, stride=2),
                relu2=nn.ReLU(),
                conv3=nn.Conv2d(32, 64, kernel_size=5, stride=1, padding=2),
                norm3=nn.GroupNorm(num_groups, 64),
                pool3=nn.MaxPool2d(kernel_size=3, stride=2),
                relu3=nn.ReLU(),
                flatten=nn.Flatten(),
            )
        )
        return with_linear_head(body, 64 * h * w, num_classes, arch="gn_lenet", input_shape=shape)

    return build_within_memory("gn_lenet", make, input_shape=shape, num_classes=num_classes,
                               num_groups=num_groups)


def cnn(
    input_shape: int | Sequence[int] = (3, 32, 32),
    num_classes: int = 10,
    *,
    variant: str | None = None,
) -> SplitModel:
    """The simple CNN of the DPFL experiments (two convolutions, three linear layers).

    Parameters
    ----------
    input_shape : sequence of int, default ``(3, 32, 32)``
        ``(channels, height, width)``, height and width at least 16. 3x32x32 (CIFAR-10) and
        1x28x28 (FEMNIST) are the paper's.
    num_classes : int, default 10
    variant : {"cifar10", "femnist"}, optional
        Layer widths: ``"cifar10"`` (Appendix F.3.2: 6 and 16 channels, 120 and 84 units) or
        ``"femnist"`` (Appendix F.4.2: 4 and 12 channels, 120 and 100 units). By default
        ``"femnist"`` for 1-channel inputs and ``"cifar10"`` otherwise.

    Returns
    -------
    SplitModel
        ``body``::

            conv1 Conv2d(C, c1, 5) -> relu1 -> pool1 MaxPool2d(2)
            conv2 Conv2d(c1, c2, 5) -> relu2 -> pool2 MaxPool2d(2) -> flatten
            fc1   Linear(c2 * h * w, f1) -> relu3 -> fc2 Linear(f1, f2) -> relu4

        ``head``: ``Linear(f2, num_classes)``. ``c2 * h * w`` is 16 * 5 * 5 = 400 for
        3x32x32 inputs and 12 * 4 * 4 = 192 for 1x28x28, the sizes the paper states.

    Notes
    -----
    Appendix F.3.2 / F.4.2 of DPFL announce "three convolutional layers and two fully
    connected layers" but describe two convolutional layers followed by three linear ones
    (400 -> 120 -> 84 -> 10, resp. 192 -> 120 -> 100 -> 10); topofl builds what is described.
    The text mentions max-pooling only after the first convolution, but the stated input of the
    first linear layer (400 = 16 * 5 * 5 for 32x32, 192 = 12 * 4 * 4 for 28x28) requires the
    same 2x2 max-pooling after the second, which topofl applies. ReLU follows every hidden
    layer. Parameters for 3x32x32 and 10 classes: 61,156 body + 850 head = 62,006; for
    1x28x28: 36,576 body + 1,010 head = 37,586.

    References
    ----------
    S. Kharrat, M. Canini, S. Horvath, "Decentralized Personalized Federated Learning",
    Appendix F.3.2 and F.4.2.

    Examples
    --------
    >>> import torch
    >>> m = tf.models.build_model("cnn", (3, 32, 32), 10, seed=0)
    >>> m(torch.zeros(2, 3, 32, 32)).shape, tf.models.count_parameters(m)["total"]
    (torch.Size([2, 10]), 62006)
    >>> tf.models.count_parameters(tf.models.cnn((1, 28, 28), 10))["total"]
    37586
    """
    shape = check_shape(input_shape, "input_shape", ndim=3, arch="cnn")
    num_classes = check_int(num_classes, "num_classes", low=1)
    if variant is None:
        variant = "femnist" if shape[0] == 1 else "cifar10"
    variant = check_choice(variant, "variant", _CNN_VARIANTS)
    (c1, c2), (f1, f2) = _CNN_VARIANTS[variant]
    h, w = check_spatial("cnn", shape, _CNN_STAGES)

    def make() -> SplitModel:
        body = nn.Sequential(
            OrderedDict(
                conv1=nn.Conv2d(shape[0], c1, kernel_size=5),
                relu1=nn.ReLU(),
                pool1=nn.MaxPool2d(kernel_size=2, stride=2),
                conv2=nn.Conv2d(c1, c2, kernel_size=5),
                relu2=nn.ReLU(),
                pool2=nn.MaxPool2d(kernel_size=2, stride=2),
                flatten=nn.Flatten(),
                fc1=nn.Linear(c2 * h * w, f1),
                relu3=nn.ReLU(),
                fc2=nn.Linear(f1, f2),
                relu4=nn.ReLU(),
            )
        )
        return with_linear_head(body, f2, num_classes, arch="cnn", input_shape=shape)

    return build_within_memory("cnn", make, input_shape=shape, num_classes=num_classes,
                               variant=variant)
