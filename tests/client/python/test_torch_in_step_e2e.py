"""f2obo.torch's Tuner stays in step with its session over real gRPC:
after a rollback, a fork or a step index the server refuses it reloads
the module and continues where the session is (the same trajectory as
the first time through); a model other than the session's is refused
(its stored fingerprint), also after a kill -9; a step survives a server
restart; create_or_resume; `tuner.session.next_t` follows the steps;
`import f2obo` gives f2obo.torch; a non-finite gradient is reported once,
naming the function and the hyperparameter.
"""
import subprocess
import sys

import numpy as np
import pytest
import torch

import f2obo
from test_torch_e2e import COMMON, STEPS, as_torch, mlp, train_loss, tuner, val_loss


def weights(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def run(t, steps):
    """Steps `t` over STEPS[:steps]; returns each step's x."""
    return [t.step(as_torch(u), as_torch(i)).x.copy() for u, i in STEPS[:steps]]


def assert_follows_session(t):
    d = t.session.decision()
    np.testing.assert_array_equal(weights(t.model), d.y)
    assert t.session.next_t == d.t


def test_after_checkpoint_and_rollback_the_tuner_reloads_and_repeats_the_trajectory(
        start_server):
    server = start_server()
    with f2obo.Client(server.address) as client, tuner(client, "f2obo") as t:
        xs = run(t, 2)
        assert t.session.checkpoint().next_t == 3
        xs += [t.step(as_torch(u), as_torch(i)).x.copy() for u, i in STEPS[2:4]]
        assert t.session.next_t == 5  # the handle follows the tuner's steps
        t.session.rollback(2)
        again = t.step(as_torch(STEPS[2][0]), as_torch(STEPS[2][1]))
        assert again.t == 3 and not again.replayed
        np.testing.assert_array_equal(again.x, xs[2])
        assert_follows_session(t)
        assert t.step(as_torch(STEPS[3][0]), as_torch(STEPS[3][1])).t == 4
        # rolled back by another handle: t = 5 is refused, the tuner reloads
        # and runs the step at the session's t = 3
        client.session(t.session.id).rollback(2)
        refused_then_run = t.step(as_torch(STEPS[2][0]), as_torch(STEPS[2][1]))
        assert refused_then_run.t == 3
        np.testing.assert_array_equal(refused_then_run.x, xs[2])
        assert_follows_session(t)


def test_a_fork_assigned_to_the_tuner_is_loaded_and_stepped(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client, tuner(client, "f2obo") as t:
        run(t, 3)
        original = t.session
        t.session.checkpoint()  # after step 3
        x4 = t.step(as_torch(STEPS[3][0]), as_torch(STEPS[3][1])).x.copy()
        run(t, 1)
        t.session = original.fork("fork", at_t=3)
        assert t.session.id == "fork" and t.session.next_t == 4
        assert_follows_session(t)
        step = t.step(as_torch(STEPS[3][0]), as_torch(STEPS[3][1]))
        assert step.t == 4 and original.info().next_t == 6  # the fork moved, not its source
        np.testing.assert_array_equal(step.x, x4)
        assert_follows_session(t)


def reshaped_mlp():
    """mlp()'s names and sizes, its first weight (4, 5) stored as (5, 4)."""
    m = mlp()
    m[0].weight = torch.nn.Parameter(m[0].weight.detach().t().contiguous())
    return m


def hp():
    return {"wd": torch.zeros(2), "cw": torch.ones(3)}


def test_resuming_with_another_model_is_refused_naming_the_parameter_also_after_kill_9(
        start_server):
    server = start_server()
    with f2obo.Client(server.address) as client:
        with tuner(client, "f2obo") as t:
            run(t, 2)
            sid = t.session.id
        server.kill()
        server.restart()
        with pytest.raises(ValueError, match=r"created for another model: parameter 0 is "
                           r"'0.weight' of shape \(5, 4\) in this model, '0.weight' of shape "
                           r"\(4, 5\) in the session"):
            f2obo.torch.Tuner(client, reshaped_mlp(), hp(), train_loss, val_loss,
                              session_id=sid, resume=True)
        wider = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(),
                                    torch.nn.Linear(6, 3)).double()
        with pytest.raises(ValueError, match=r"parameter 0 is '0.weight' of shape \(6, 5\)"):
            f2obo.torch.Tuner(client, wider, hp(), train_loss, val_loss, session_id=sid,
                              resume=True)
        with pytest.raises(ValueError, match=r"hyperparameter 1 is 'cw' of shape \(4,\)"):
            f2obo.torch.Tuner(client, mlp(), {"wd": torch.zeros(2), "cw": torch.ones(4)},
                              train_loss, val_loss, session_id=sid, resume=True)
        assert client.session(sid).info().next_t == 3  # refusals changed nothing
        # a session created without a fingerprint: its sizes are still checked
        plain = client.create_session(family="oracle", x_dim=5, y_dim=40, algorithm="f2obo",
                                       alpha=0.1, beta=0.1)
        with pytest.raises(ValueError, match=r"y_dim \(parameters\) = 40, this model 39"):
            f2obo.torch.Tuner(client, mlp(), hp(), train_loss, val_loss, session_id=plain.id,
                              resume=True)


def test_a_step_retries_across_a_server_restart(start_server):
    server = start_server()
    with f2obo.Client(server.address) as client, tuner(client, "f2obo") as t:
        run(t, 2)
        server.kill()
        server.restart()
        step = t.step(as_torch(STEPS[2][0]), as_torch(STEPS[2][1]))
        assert step.t == 3
        assert_follows_session(t)


def test_create_or_resume_creates_then_resumes_and_next_t_follows(start_server):
    server = start_server()
    hp0 = {"wd": f2obo.torch.Hyperparameter(torch.full((2,), 0.01), box=(0.0, 0.05)),
           "cw": f2obo.torch.Hyperparameter(torch.ones(3), box=(0.5, 2.0))}
    with f2obo.Client(server.address) as client:
        with f2obo.torch.Tuner.create_or_resume(client, mlp(), hp0, train_loss, val_loss,
                                                session_id="run", algorithm="f2obo",
                                                **COMMON) as first:
            assert first.session.next_t == 1
            run(first, 2)
            assert first.session.next_t == 3
            after = first.session.decision()
        with f2obo.torch.Tuner.create_or_resume(client, mlp(), hp0, train_loss, val_loss,
                                                session_id="run", algorithm="f2obo",
                                                **COMMON) as second:
            np.testing.assert_array_equal(weights(second.model), after.y)
            np.testing.assert_array_equal(second.hparams["wd"].numpy(), after.x[:2])
            assert second.step(as_torch(STEPS[2][0]), as_torch(STEPS[2][1])).t == 3
            assert second.session.next_t == 4
        assert [s.session_id for s in client.list_sessions()] == ["run"]


def test_import_f2obo_gives_f2obo_torch_and_loads_torch_only_then():
    code = ("import sys, f2obo\n"
            "assert 'torch' not in sys.modules\n"
            "print(f2obo.torch.Tuner.__name__, 'torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["Tuner", "True"]


def test_an_infinite_gradient_names_g_and_the_hyperparameter_entry_once(start_server):
    server = start_server()

    def bad_train_loss(model, hp, batch):
        # sqrt at 0: value 0, derivative in wd[1] infinite
        return train_loss(model, hp, batch) + torch.sqrt(hp["wd"][1] - hp["wd"][1].detach())
    with f2obo.Client(server.address) as client:
        hp_ = {"wd": f2obo.torch.Hyperparameter(torch.full((2,), 0.01), box=(0.0, 0.05)),
               "cw": torch.ones(3)}
        with f2obo.torch.Tuner(client, mlp(), hp_, bad_train_loss, val_loss, algorithm="f2obo",
                               **COMMON) as t:
            with pytest.raises(f2obo.InvalidArgument) as e:
                run(t, 1)
            message = str(e.value)
            assert message.count("step 1") == 1, message
            assert "g (train_loss)" in message and "hyperparameter 'wd'[1] is inf" in message
            assert t.session.info().next_t == 1  # nothing applied
