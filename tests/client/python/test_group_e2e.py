"""Groups through the Python package against a real server: each member of
a group follows exactly the trajectory of a lone session with its
algorithm and options on the same data."""
import numpy as np
import pytest

import f2obo
from helpers import batches, classification_data, same_bits

D, C = 8, 3
X, Y = classification_data(rows=500, features=D, classes=C, seed=5)
STEPS = batches(X, Y, rows_per_step=48, steps=10, seed=6)
SHARED = dict(family="loss_tuning", features=D, classes=C, alpha=0.05, beta=0.05, gamma=0.01,
              x0=[1.0] * C + [0.0] * C, exact_every=0)
MEMBERS = {"f2obo": "f2obo",
           "af2obo": {"algorithm": "af2obo", "max_inner_iterations": 30},
           "sf2obo": {"algorithm": "sf2obo", "gamma": 0.02}}


def lone(client, algorithm, **options):
    return client.create_session(**dict(SHARED, algorithm=algorithm, **options))


def test_group_members_follow_their_lone_trajectories(client):
    group = client.create_group("cmp", members=MEMBERS, **SHARED)
    info = group.info()
    assert [m.session_id for m in info.members] == ["cmp.f2obo", "cmp.af2obo", "cmp.sf2obo"]
    assert info.members[1].spec.options.max_inner_iterations == 30
    assert info.members[2].spec.options.gamma == 0.02  # the member's own option wins
    alone = {"f2obo": lone(client, "f2obo"),
             "af2obo": lone(client, "af2obo", max_inner_iterations=30),
             "sf2obo": lone(client, "sf2obo", gamma=0.02)}
    first = group.step(*STEPS[0])
    assert first.t == 1 and first.ok and first.names() == list(MEMBERS)
    results = [first] + list(group.stream(STEPS[1:], in_flight=3))
    assert [r.t for r in results] == list(range(1, len(STEPS) + 1))
    for step, r in zip(STEPS, results):
        for name, session in alone.items():
            assert same_bits(r[name].x, session.step(*step).x), (name, r.t)
    assert set(results[-1].results) == set(MEMBERS) and results[-1].errors == {}
    sessions = group.sessions
    assert same_bits(sessions["af2obo"].decision().x, alone["af2obo"].decision().x)
    assert group.next_t == len(STEPS) + 1


def test_group_sequence_members_and_delete(client):
    group = client.create_group("seq", family="loss_tuning", features=D, classes=C,
                                members=[{"name": "a", "algorithm": "f2obo"},
                                         f2obo.pb.GroupMember(name="b", algorithm="f2obo_sl")])
    assert [m.spec.algorithm for m in group.info().members] == ["f2obo", "f2obo_sl"]
    assert group.delete() == ["seq.a", "seq.b"]
    with pytest.raises(f2obo.NotFound) as e:
        client.get_group("seq")
    assert "seq" in str(e.value)
    with pytest.raises(TypeError) as e:
        client.create_group("bad", family="loss_tuning", features=D, classes=C,
                            members={"a": {"algorithm": "f2obo", "gama": 1.0}})
    assert "member 'a'" in str(e.value) and "did you mean 'gamma'" in str(e.value)


def test_a_member_that_fails_fails_the_whole_step_naming_it(client):
    # lambda_1 = 1e150 (the largest option accepted) makes lambda_2 =
    # 2 lambda_1 leave the safe magnitude for one member only: its round is
    # refused, so the step is applied to no member (all
    # members or none; before, the other applied it and the two drifted).
    group = client.create_group("fail", members={"ok": "f2obo",
                                                 "big": {"algorithm": "f2obo",
                                                         "lambda1": 1e150}}, **SHARED)
    for check in (False, True):
        with pytest.raises(f2obo.InvalidArgument) as raised:
            group.step(*STEPS[0], check=check)
        error = raised.value
        assert error.code.name == "INVALID_ARGUMENT"
        assert "fail.big" in str(error) and "non-finite lambda" in str(error)
        assert "applied to no member" in str(error)
        assert [m.next_t for m in group.info().proto.members] == [1, 1]
