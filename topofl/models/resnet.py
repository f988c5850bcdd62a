"""ResNet-18 with GroupNorm, the backbone of the DFedPGP and PFedDST experiments."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch.nn.functional as F
from torch import Tensor, nn

from topofl._utils.validation import check_int
from topofl.models._core import SplitModel, build_within_memory, with_linear_head
from topofl.models.inputs import check_shape

__all__ = ["resnet18_gn"]


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with GroupNorm and an identity (or 1x1 projection) shortcut.

    ``relu(norm2(conv2(relu(norm1(conv1(x))))) + shortcut(x))``; the shortcut is a strided
    1x1 convolution followed by GroupNorm when the stride or the width changes.
    """

    def __init__(self, in_planes: int, planes: int, stride: int, num_groups: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(num_groups, planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(num_groups, planes)
        self.shortcut: nn.Module
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                OrderedDict(
                    conv=nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                    norm=nn.GroupNorm(num_groups, planes),
                )
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def resnet18_gn(
    input_shape: int | Sequence[int] = (3, 32, 32),
    num_classes: int = 10,
    *,
    num_groups: int = 32,
    width: int = 64,
) -> SplitModel:
    """ResNet-18 with GroupNorm instead of BatchNorm, CIFAR-style (3x3 stem, no max-pooling).

    Parameters
    ----------
    input_shape : sequence of int, default ``(3, 32, 32)``
        ``(channels, height, width)``; any size (each stride-2 stage maps ``s`` to
        ``ceil(s / 2)``, and global average pooling ends the body), e.g. ``(1, 8, 8)``.
    num_classes : int, default 10
    num_groups : int, default 32
        Groups of every GroupNorm; must divide ``width``.
    width : int, default 64
        Channels of the stem and of stage 1; stages 2-4 have 2x, 4x, 8x as many. The default
        is ResNet-18's; smaller widths make cheap test models.

    Returns
    -------
    SplitModel
        ``body``: ``stem`` (``Conv2d(C, 64, 3, padding=1, bias=False)``, GroupNorm, ReLU),
        ``layer1`` .. ``layer4`` (two :class:`BasicBlock` each, 64/128/256/512 channels, the
        first block of layers 2-4 with stride 2 and a 1x1-convolution shortcut), ``pool``
        (global average pooling) and ``flatten``; ``head``: ``Linear(512, num_classes)``.
        11,168,832 body + 5,130 head = 11,173,962 parameters for 3-channel inputs and 10
        classes (the same as the BatchNorm CIFAR ResNet-18: GroupNorm has the same affine
        parameters and no running statistics).

    Notes
    -----
    DFedPGP (Section 5.1) evaluates every method "on ResNet-18 [...] and replace[s] the batch
    normalization with the group normalization followed by [Dis-PFL, ...]", personalizing "the
    lower linear classifier layers"; PFedDST uses the same backbone with the "header" (final
    fully connected layer) personal. The layer list follows the CIFAR ResNet-18 of the Dis-PFL
    code (``rong-dai/DisPFL``, ``fedml_api/model/cv/resnet.py``): 3x3 stride-1 stem without
    max-pooling, bias-free convolutions, ``GroupNorm(32, C)`` in place of every BatchNorm
    including the shortcut's. Dis-PFL ends with a 4x4 average pooling, equal to the global
    average pooling used here for 32x32 inputs. Initialisation is PyTorch's default.

    References
    ----------
    K. He, X. Zhang, S. Ren, J. Sun, "Deep Residual Learning for Image Recognition", CVPR 2016.
    Y. Wu, K. He, "Group Normalization", ECCV 2018. Y. Liu et al., "Decentralized Directed
    Collaboration for Personalized Federated Learning" (DFedPGP), Section 5.1.

    Examples
    --------
    >>> import torch
    >>> m = tf.models.build_model("resnet18_gn", (1, 8, 8), 10, width=8, num_groups=2, seed=0)
    >>> m(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 10])
    >>> tf.models.count_parameters(tf.models.resnet18_gn())
    {'body': 11168832, 'head': 5130, 'total': 11173962}
    """
    shape = check_shape(input_shape, "input_shape", ndim=3, arch="resnet18_gn")
    num_classes = check_int(num_classes, "num_classes", low=1)
    width = check_int(width, "width", low=1)
    num_groups = check_int(num_groups, "num_groups", low=1)
    if width % num_groups:
        raise ValueError(
            f"num_groups must divide width (the channels of the stem), got num_groups="
            f"{num_groups} and width={width}"
        )

    def make() -> SplitModel:
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        layers["stem"] = nn.Sequential(
            OrderedDict(
                conv=nn.Conv2d(shape[0], width, 3, stride=1, padding=1, bias=False),
                norm=nn.GroupNorm(num_groups, width),
                relu=nn.ReLU(),
            )
        )
        in_planes = width
        for k, (mult, stride) in enumerate(((1, 1), (2, 2), (4, 2), (8, 2)), start=1):
            planes = width * mult
            layers[f"layer{k}"] = nn.Sequential(
                BasicBlock(in_planes, planes, stride, num_groups),
                BasicBlock(planes, planes, 1, num_groups),
            )
            in_planes = planes
        layers["pool"] = nn.AdaptiveAvgPool2d(1)
        layers["flatten"] = nn.Flatten()
        return with_linear_head(nn.Sequential(layers), in_planes, num_classes,
                                arch="resnet18_gn", input_shape=shape)

    return build_within_memory("resnet18_gn", make, input_shape=shape,
                               num_classes=num_classes, num_groups=num_groups, width=width)
