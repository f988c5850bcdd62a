"""Devices: a torch device that exists here and that topofl computes on."""

from __future__ import annotations

from typing import Any

from topofl._utils.validation.scalars import _type_name

__all__ = ["check_device"]


def check_device(device: Any, name: str = "device") -> Any:
    """Return ``torch.device(device)`` if that device exists here, else raise.

    Raises
    ------
    TypeError
        If ``device`` is not a str, int or ``torch.device``.
    ValueError
        If torch does not know the string, the device is CUDA/MPS and not available, or it is
        not one topofl computes on (``"meta"``, ``"xla"`` ...).

    Examples
    --------
    >>> from topofl._utils.validation.devices import check_device
    >>> check_device("cpu")
    device(type='cpu')
    >>> check_device("gpu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: device must be a torch device such as 'cpu' or 'cuda:0', got 'gpu' ...
    """
    import torch

    if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
        raise TypeError(
            f"{name} must be a str such as 'cpu' or 'cuda:0' or a torch.device, got "
            f"{_type_name(device)} {device!r}"
        )
    if isinstance(device, int) and device < 0:
        raise ValueError(f"{name} index must be >= 0, got {device}")
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{name} must be a torch device such as 'cpu' or 'cuda:0', got {device!r} ({exc})"
        ) from None
    if d.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{name}={device!r} needs CUDA, which is not available here")
        if d.index is not None and d.index >= count:
            raise ValueError(f"{name}={device!r}: only {count} CUDA device(s) here")
    elif d.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={device!r} needs MPS, which is not available here")
    elif d.type not in ("cpu", "cuda", "mps"):
        what = " (the meta device holds shapes, not numbers)" if d.type == "meta" else ""
        raise ValueError(f"{name}={device!r}: topofl runs on 'cpu', 'cuda' or 'mps'{what}")
    return d
