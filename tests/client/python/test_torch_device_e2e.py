"""f2obo.torch keeps the user's dtype and device (over a real server): a
float32 module on its device steps without being moved or cast, every
tensor its losses see is on that device, and after each step its
parameters are the session's y (float64 on the server) cast to float32.
Runs on CPU here; on a machine with CUDA the same test runs on the GPU
too, with no other code.
"""
import numpy as np
import pytest
import torch

import f2obo
import f2obo.torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
D, C = 5, 3


@pytest.mark.parametrize("device", DEVICES)
def test_a_float32_module_stays_on_its_device_and_in_its_dtype(start_server, device):
    server = start_server()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(D, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, C)).to(device=device, dtype=torch.float32)
    seen = []

    def check(m, hp, batch):
        X, y = batch
        params = list(m.parameters())
        seen.extend({t.device.type for t in [X, y, hp["wd"]] + params})
        assert all(p.dtype == torch.float32 for p in params)
        return X, y, params

    def train_loss(m, hp, batch):
        X, y, params = check(m, hp, batch)
        ce = torch.nn.functional.cross_entropy(m(X), y)
        return ce + 0.5 * hp["wd"] * sum((p * p).sum() for p in params)

    def val_loss(m, hp, batch):
        X, y, _ = check(m, hp, batch)
        return torch.nn.functional.cross_entropy(m(X), y)

    g = torch.Generator().manual_seed(1)

    def batch(rows=16):
        y = torch.randint(0, C, (rows,), generator=g)
        X = torch.randn(rows, D, generator=g) + y[:, None]
        return X.to(device=device, dtype=torch.float32), y.to(device)

    hp = {"wd": f2obo.torch.Hyperparameter(torch.tensor(0.01, device=device), box=(0.0, 0.1))}
    with f2obo.Client(server.address) as client:
        with f2obo.torch.Tuner(client, model, hp, train_loss, val_loss, algorithm="sf2obo",
                               alpha=0.2, beta=0.3, gamma=0.05) as tuner:
            assert tuner.dtype == torch.float32 and tuner.device.type == device
            for _ in range(4):
                tuner.step(batch(), batch())
                y = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
                assert y.device.type == device and y.dtype == torch.float32
                session_y = tuner.session.decision().y
                np.testing.assert_array_equal(y.cpu().numpy(), session_y.astype(np.float32))
    assert seen and set(seen) == {device}
