"""The batched executor against the per-client loop on topofl's convolutional models.

``executor="auto"`` runs a 1-d CNN (``cnn1d``) batched on the CPU and a 2-d one (GN-LeNet) with
the loop (:func:`topofl.engine.executors.loop_on_cpu`); the two executors must give the same
training to float32 rounding either way. Stated tolerance: after 10 plain SGD steps (cnn1d at
lr 0.05, GN-LeNet at its paper's 0.002) every parameter within ``1e-6`` of the largest parameter
(measured: cnn1d 7e-8, GN-LeNet 1.2e-7) and every loss within ``1e-5`` relative (measured
3.4e-7): the float32 rounding of gradients summed in other orders. GN-LeNet (whose default on
the CPU stays the loop) is held to ``1e-4`` and ``5e-4``: with ATen's default kernels
(``ATEN_CPU_CAPABILITY=default``) its two paths part at the sixth step by 1.4e-5 of the largest
parameter at once, a discrete step (likely a max-pooling or ReLU decision taken the other way;
not traced), and reach 6.9e-5 and a loss 2.3e-4 apart at the tenth (with AVX512 kernels 1.2e-7
and 1.3e-7 throughout). At GN-LeNet's lr 0.05 on 8 random images a client
memorises them chaotically (losses jump to 10) and the two executors drift apart by 1e-3 within
10 steps, as any two float32 summation orders would.
"""

from __future__ import annotations

import pytest
import torch

import topofl as tf
from topofl.engine import ParamLayout
from topofl.engine.executors import BatchedExecutor, LoopExecutor, loop_on_cpu, make_executor
from topofl.engine.layout import init_parameters

PARAM_TOL = {"cnn1d": 1e-6, "gn_lenet": 1e-4}
LOSS_TOL = {"cnn1d": 1e-5, "gn_lenet": 5e-4}
CASES = [("cnn1d", (1, 40)), ("gn_lenet", (3, 32, 32))]
LR = {"cnn1d": 0.05, "gn_lenet": 0.002}


@pytest.mark.parametrize(("name", "shape"), CASES)
def test_batched_equals_loop_over_ten_steps(name: str, shape: tuple[int, ...]) -> None:
    model = tf.models.build_model(name, shape, 10, seed=0)
    layout = ParamLayout.from_model(model)
    n, b = 4, 8
    flat = init_parameters(model, layout, n, seed=0, same=False, device=torch.device("cpu"),
                           dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, b, *shape, generator=g)
    y = torch.randint(0, 10, (n, b), generator=g)
    batched, loop = BatchedExecutor(model, layout), LoopExecutor(model, layout)
    # cnn1d takes batched products (unfold + baddbmm), GN-LeNet vmap's grouped convolutions
    assert (batched.stack is not None) is (name == "cnn1d")
    a, c = flat.clone(), flat.clone()
    ga, gc = torch.zeros_like(a), torch.zeros_like(c)
    for _ in range(10):
        la = batched.grad(a, x, y, "all", ga)
        lc = loop.grad(c, x, y, "all", gc)
        assert float(((la - lc).abs() / lc.abs()).max()) <= LOSS_TOL[name]
        a -= LR[name] * ga
        c -= LR[name] * gc
    assert not torch.equal(a, flat)
    rel = float((a - c).abs().max() / c.abs().max())
    assert rel <= PARAM_TOL[name], f"{name}: parameters differ by {rel:.3g} of the largest"


@pytest.mark.parametrize(("name", "shape", "loop"), [(*c, c[0] != "cnn1d") for c in CASES])
def test_auto_runs_1d_convolutions_batched_on_cpu(name: str, shape: tuple[int, ...],
                                                  loop: bool) -> None:
    model = tf.models.build_model(name, shape, 10, seed=0)
    layout = ParamLayout.from_model(model)
    assert loop_on_cpu(model) is loop
    ex = make_executor("auto", model, layout, torch.device("cpu"))
    assert isinstance(ex, LoopExecutor if loop else BatchedExecutor)
    # elsewhere than the CPU every model runs batched
    assert isinstance(make_executor("auto", model, layout, torch.device("meta")), BatchedExecutor)


def test_conv1d_products_equal_vmap_to_rounding() -> None:
    """The 1-d convolutions as batched products (``_stack_forward``) against ``vmap``'s
    grouped convolutions: losses and gradients of every part, in chunks of clients, with a
    stride, a padding and no bias (float64 to 1e-12, float32 to 1e-5 of the largest)."""
    from torch import nn

    from topofl.models import SplitModel

    body = nn.Sequential(nn.Conv1d(2, 3, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv1d(3, 4, 3, stride=2, padding=1, bias=False), nn.ReLU(),
                         nn.Conv1d(4, 4, 2), nn.ReLU(), nn.Flatten())
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        model = SplitModel(body, nn.Linear(4 * 2, 3), arch="conv1d-test", input_shape=(2, 9),
                           num_classes=3).to(dtype)
        layout = ParamLayout.from_model(model, head=["head.weight", "head.bias"])
        ex = BatchedExecutor(model, layout, chunk_size=3)
        assert ex.stack is not None
        ref = BatchedExecutor(model, layout, chunk_size=3)
        ref.stack = None  # the vmap path
        g = torch.Generator().manual_seed(0)
        flat = torch.randn(5, layout.num_params, dtype=dtype, generator=g)
        x = torch.randn(5, 7, 2, 9, dtype=dtype, generator=g)
        y = torch.randint(0, 3, (5, 7), generator=g)
        for part in ("all", "body", "head"):
            a, r = torch.zeros_like(flat), torch.zeros_like(flat)
            la, lr = ex.grad(flat, x, y, part, a), ref.grad(flat, x, y, part, r)
            assert float((la - lr).abs().max()) <= tol * float(lr.abs().max())
            assert float((a - r).abs().max()) <= tol * float(r.abs().max())


@pytest.mark.parametrize(("kernel", "stride"), [(1, 1), (3, 1), (3, 2), (5, 2), (2, 3)])
def test_conv1d_windows_gradient(kernel: int, stride: int) -> None:
    """The windows' hand-written backward (strided adds) against autograd's numerical one."""
    from topofl.engine.executors import _Windows

    h = torch.randn(2, 3, 11, 4, dtype=torch.float64, requires_grad=True,
                    generator=torch.Generator().manual_seed(kernel * 10 + stride))
    ref = h.detach().unfold(2, kernel, stride).transpose(3, 4).reshape(2, -1, kernel * 4)
    assert torch.equal(_Windows.apply(h, kernel, stride), ref)
    assert torch.autograd.gradcheck(lambda t: _Windows.apply(t, kernel, stride), (h,))
