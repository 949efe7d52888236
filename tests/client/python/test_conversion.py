"""numpy / scipy.sparse -> wire batches, keyword options -> specs, replies ->
result views: the package's conversions, without a server.  The fast
packed-bytes path is checked against protobuf's own element-by-element
encoding; the descriptor-driven routing against a proto that has grown new
fields and sections."""
import pickle

import grpc
import numpy as np
import pytest
import scipy.sparse
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf import message_factory

import f2obo
from f2obo import errors, fields
from f2obo import pb
from f2obo.spec import FlatFields


# ------------------------------------------------------------ packed fields

@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_bulk_doubles_encode_like_protobuf(n):
    values = np.random.default_rng(n).normal(size=n) * 1e3
    if n >= 3:
        values[:3] = [-0.0, np.inf, 5e-324]
    fast, slow = pb.DenseMatrix(), pb.DenseMatrix()
    fields.extend_repeated(fast, fast.DESCRIPTOR.fields_by_name["values"], values, "v")
    slow.values.extend(values.tolist())
    assert fast == slow
    assert fast.SerializeToString() == slow.SerializeToString()


@pytest.mark.parametrize("field,values", [
    ("labels", [0, 1, 127, 128, 300, 2 ** 31 - 1, -1, -(2 ** 31)]),  # int32
    ("indptr", [0, 1, 2 ** 35, 2 ** 63 - 1, -5]),                    # int64
])
def test_bulk_varints_encode_like_protobuf(field, values):
    values = np.array(values * 40, dtype=np.int64)
    msg = pb.Batch() if field == "labels" else pb.CsrMatrix()
    fast, slow = type(msg)(), type(msg)()
    fields.extend_repeated(fast, fast.DESCRIPTOR.fields_by_name[field], values, field)
    getattr(slow, field).extend(values.tolist())
    assert list(getattr(fast, field)) == values.tolist()
    assert fast.SerializeToString() == slow.SerializeToString()


def test_varints_of_every_length():
    u = np.array([(1 << (7 * k)) - 1 for k in range(1, 10)] + [2 ** 64 - 1, 0],
                 dtype=np.uint64)
    msg = pb.CsrMatrix()
    msg.ParseFromString(b"\x1a" + fields.varints(np.array([len(fields.varints(u))],
                                                         dtype=np.uint64)) + fields.varints(u))
    assert [v & (2 ** 64 - 1) for v in msg.indptr] == u.tolist()


# ------------------------------------------------------------------ batches

def test_dense_batch_of_any_real_dtype_and_layout():
    X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    for features in (X, np.asfortranarray(X), X.astype(np.float64), X.tolist()):
        b = f2obo.to_batch((features, np.array([0, 1, 2])))
        assert (b.dense.rows, b.dense.cols) == (3, 4)
        assert list(b.dense.values) == X.astype(np.float64).ravel().tolist()
        assert list(b.labels) == [0, 1, 2]


def test_integer_second_element_is_labels_float_is_targets():
    X = np.ones((2, 3))
    assert list(f2obo.to_batch((X, np.array([1, 0]))).labels) == [1, 0]
    b = f2obo.to_batch((X, np.array([0.5, 1.5])))
    assert list(b.targets) == [0.5, 1.5] and not b.labels


def test_sparse_batch_is_canonical_csr():
    # Unsorted columns and a duplicate entry, as COO: summed and sorted.
    coo = scipy.sparse.coo_matrix(([1.0, 2.0, 3.0, 4.0], ([0, 0, 1, 0], [3, 1, 2, 1])),
                                  shape=(2, 5))
    b = f2obo.to_batch((coo, np.array([1, 0])))
    assert b.WhichOneof("features") == "csr"
    assert (b.csr.rows, b.csr.cols) == (2, 5)
    assert list(b.csr.indptr) == [0, 2, 3]
    assert list(b.csr.indices) == [1, 3, 2]
    assert list(b.csr.values) == [6.0, 1.0, 3.0]
    dense = coo.toarray()
    unsorted = scipy.sparse.csr_matrix((np.array([1.0, 2.0]), np.array([4, 0]),
                                        np.array([0, 2, 2])), shape=(2, 5))
    unsorted.has_sorted_indices = False
    c = f2obo.to_batch({"features": unsorted})
    assert list(c.csr.indices) == [0, 4] and list(c.csr.values) == [2.0, 1.0]
    assert np.array_equal(scipy.sparse.csr_matrix(
        (list(b.csr.values), list(b.csr.indices), list(b.csr.indptr)), shape=(2, 5)).toarray(),
        dense)


def test_duck_typed_csr_needs_no_scipy():
    class Csr:
        indptr, indices, data, shape = [0, 1, 2], [2, 0], [5.0, 6.0], (2, 3)
    b = f2obo.to_batch({"features": Csr(), "labels": [0, 1]})
    assert list(b.csr.indices) == [2, 0] and list(b.csr.values) == [5.0, 6.0]


def test_mapping_batch_takes_any_batch_field():
    b = f2obo.batch(features=np.eye(2), labels=[0, 1], class_weights=[0.25, 0.75])
    assert list(b.class_weights) == [0.25, 0.75]
    q = f2obo.to_batch({"m": np.array([[1.0, 0.0], [0.0, 2.0]]), "c": [0.0, 1.0]})
    assert (q.m.rows, q.m.cols, list(q.m.values), list(q.c)) == (2, 2, [1, 0, 0, 2], [0, 1])


@pytest.mark.parametrize("value,error,words", [
    ((np.ones(3), np.array([0, 1, 2])), ValueError, ["upper.features", "2-D"]),
    ((np.ones((2, 2)), np.array([[0, 1]])), ValueError, ["upper", "1-D"]),
    ((np.array([["a", "b"]]), np.array([0])), TypeError, ["upper.features", "real numbers"]),
    ({"features": np.ones((1, 2)), "labels": [0.5]}, ValueError, ["upper.labels[0]", "0.5"]),
    ({"features": np.ones((1, 2)), "labels": [2 ** 40]}, ValueError, ["upper.labels[0]"]),
    ({"featurs": np.ones((1, 2))}, TypeError, ["'featurs'", "did you mean 'features'"]),
    ([1, 2, 3], TypeError, ["upper: cannot make a Batch from a list", "dense, csr, labels"]),
])
def test_bad_batches_raise_naming_the_field(value, error, words):
    with pytest.raises(error) as e:
        f2obo.to_batch(value, where="upper")
    for w in words:
        assert w in str(e.value)


# ------------------------------------------------------------------ specs

def spec(**kw):
    from f2obo.client import session_spec
    return session_spec("create_session()", kw)


def test_keywords_reach_the_field_of_that_name_in_any_section():
    s = spec(family="logistic_hpo", features=784, classes=10, algorithm="af2obo",
             box=(0.0, 0.1), alpha_auto=True, gamma=0.01, exact_every=5, seed=7, x0=[0.05] * 3)
    assert s.family.name == "logistic_hpo" and s.family.features == 784
    assert s.algorithm == "af2obo" and s.seed == 7 and list(s.x0) == [0.05] * 3
    assert s.options.alpha_auto and s.options.gamma == 0.01
    assert s.options.HasField("gamma") and not s.options.HasField("beta")
    assert list(s.constraint.box.lo) == [0.0] and list(s.constraint.box.hi) == [0.1]
    assert s.metrics.exact_every == 5


def test_whole_sections_then_flat_keywords_refine_them():
    s = spec(family={"name": "quadratic", "x_dim": 2, "y_dim": 2}, options={"gamma": 0.5},
             inner_steps=3, ball=(2.0, [1.0, 1.0]))
    assert s.family.x_dim == 2 and s.options.gamma == 0.5 and s.options.inner_steps == 3
    assert s.constraint.WhichOneof("kind") == "ball"
    assert s.constraint.ball.radius == 2.0 and list(s.constraint.ball.center) == [1.0, 1.0]
    assert spec(ball=3.0).constraint.ball.radius == 3.0
    assert spec(unconstrained=True).constraint.WhichOneof("kind") == "unconstrained"


@pytest.mark.parametrize("kw,error,words", [
    ({"gama": 0.1}, TypeError, ["'gama'", "did you mean 'gamma'"]),
    ({"inner_steps": 2.5}, TypeError, ["inner_steps", "integer"]),
    ({"inner_steps": 2 ** 40}, ValueError, ["inner_steps", "outside"]),
    ({"alpha_auto": 1}, TypeError, ["alpha_auto", "bool"]),
    ({"box": (0, 1, 2)}, TypeError, ["box", "3 values"]),
    ({"family": 3.5}, TypeError, ["family.name", "str"]),
])
def test_bad_options_raise_naming_the_option(kw, error, words):
    with pytest.raises(error) as e:
        spec(**kw)
    for w in words:
        assert w in str(e.value)


def test_numpy_scalars_are_accepted():
    s = spec(gamma=np.float32(0.25), inner_steps=np.int64(4), alpha_auto=np.bool_(True))
    assert (s.options.gamma, s.options.inner_steps, s.options.alpha_auto) == (0.25, 4, True)


def grown_proto():
    """SessionSpec as the proto may grow it: a new option, a new section
    (with a field whose name another section has too) and a new constraint."""
    f = descriptor_pb2.FileDescriptorProto(name="grown.proto", package="grown", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto

    def message(name, *specs):
        m = f.message_type.add(name=name)
        for number, (fname, ftype, label, type_name) in enumerate(specs, 1):
            field = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = type_name
        return m
    opt, rep = T.LABEL_OPTIONAL, T.LABEL_REPEATED
    message("Options", ("gamma", T.TYPE_DOUBLE, opt, None),
            ("restart_every", T.TYPE_INT32, opt, None))        # new option
    message("Tasks", ("count", T.TYPE_INT32, opt, None),
            ("gamma", T.TYPE_DOUBLE, opt, None),                # shared name
            ("weights", T.TYPE_DOUBLE, rep, None))
    message("L1Ball", ("radius", T.TYPE_DOUBLE, opt, None))
    message("Spec", ("algorithm", T.TYPE_STRING, opt, None),
            ("options", T.TYPE_MESSAGE, opt, ".grown.Options"),
            ("tasks", T.TYPE_MESSAGE, opt, ".grown.Tasks"),
            ("l1_ball", T.TYPE_MESSAGE, opt, ".grown.L1Ball"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("grown.Spec"))


def test_fields_the_proto_gains_are_accepted_by_name():
    Spec = grown_proto()
    flat = FlatFields(Spec.DESCRIPTOR)
    s = Spec()
    flat.fill(s, {"algorithm": "rsvrb", "restart_every": 10, "count": 4,
                  "weights": np.array([0.5, 0.5]), "l1_ball": 2.0,
                  "tasks": {"gamma": 0.3}}, "create_session()")
    assert s.options.restart_every == 10 and s.tasks.count == 4
    assert list(s.tasks.weights) == [0.5, 0.5] and s.l1_ball.radius == 2.0
    assert s.tasks.gamma == 0.3
    with pytest.raises(TypeError) as e:
        flat.fill(Spec(), {"gamma": 0.1}, "create_session()")
    assert "options and tasks" in str(e.value) and "options={'gamma'" in str(e.value)
    # ... and reach users in results.
    v = f2obo.View(s)
    assert v.tasks.count == 4 and np.array_equal(v.tasks.weights, [0.5, 0.5])
    assert v.options.restart_every == 10


# ------------------------------------------------------------------ views

def reply():
    r = pb.StepReply(session_id="s", t=3, x=[0.5, -0.0, 1e-300])
    setattr(r.report.bilevel, "lambda", 15.0)
    r.report.upper_loss_before = 0.7
    return r


def test_step_result_exposes_fields_and_the_report():
    r = f2obo.StepResult(reply())
    assert r.t == 3 and r.x.dtype == np.float64 and r.x.tobytes() == \
        np.array([0.5, -0.0, 1e-300]).tobytes()
    assert r.report.lambda_ == 15.0 and r.lambda_ == 15.0 and r.upper_loss_before == 0.7
    assert r.accuracy_before is None  # proto3 optional, unset
    assert r.latest_exact is None     # message, absent
    assert r.replayed is False
    assert "upper_loss_before" in dir(r) and "lambda_" in dir(r)
    d = r.to_dict()
    assert d["report"]["bilevel"]["lambda"] == 15.0 and d["latest_exact"] is None
    with pytest.raises(AttributeError) as e:
        r.upper_los
    assert "'upper_los'" in str(e.value) and "upper_loss_before" in str(e.value)
    with pytest.raises(AttributeError):
        r.t = 4


def test_views_answer_for_the_fields_of_the_problem_class_part_that_is_set():
    # A multi-task round: lambda_ is its part's, as a bilevel round's is
    # the bilevel part's; a simple bilevel round has none.
    m = pb.StepMetrics(t=2)
    setattr(m.report.multitask, "lambda", 2.5)
    m.report.multitask.tasks = 3
    m.exact.multitask.regret_term = 0.25
    m.exact.running.multitask.blreg = 1.5
    v = f2obo.StepMetrics(m)
    assert v.lambda_ == 2.5 and v.report.lambda_ == 2.5 and v.tasks == 3
    assert v.regret_term == 0.25 and v.exact.running.blreg == 1.5
    assert "lambda_" in dir(v) and "blreg" in dir(v.exact.running)
    s = pb.StepReply(t=1)
    s.report.simple.inner_loss_before = 0.5
    r = f2obo.StepResult(s)
    assert r.inner_loss_before == 0.5
    with pytest.raises(AttributeError):
        r.lambda_
    info = pb.SessionInfo(session_id="a", x_dim=3)
    info.bilevel.y_dim = 7
    info.metrics.bilevel.blreg = 0.125
    i = f2obo.SessionInfo(info)
    assert i.y_dim == 7 and i.x_dim == 3 and i.metrics.blreg == 0.125


def test_views_pickle_and_compare():
    r = f2obo.StepResult(reply())
    back = pickle.loads(pickle.dumps(r))
    assert back == r and type(back) is f2obo.StepResult and back.x.tobytes() == r.x.tobytes()
    assert "StepResult(" in repr(r) and "RoundReport(" in repr(r)


# ----------------------------------------------------------------- errors

def test_every_status_code_has_its_own_exception_class():
    classes = set()
    for code in grpc.StatusCode:
        if code == grpc.StatusCode.OK:
            continue
        e = errors.from_code(code, "server says why")
        assert isinstance(e, f2obo.Error) and type(e) is not f2obo.Error
        assert e.code == code and e.message == "server says why" and str(e) == "server says why"
        assert errors.from_number(code.value[0], "m").code == code
        classes.add(type(e))
    assert len(classes) == len(grpc.StatusCode) - 1
    assert issubclass(f2obo.InvalidArgument, ValueError)
    assert issubclass(f2obo.NotFound, LookupError)
    assert f2obo.ERROR_CLASSES[grpc.StatusCode.RESOURCE_EXHAUSTED] is f2obo.ResourceExhausted


# ------------------------------------------------------------------ drift

def test_rng_is_splitmix_seeded_xoshiro256starstar():
    # splitmix64's first outputs from state 0 (Vigna's reference sequence).
    assert f2obo.drift.Rng(0).s[:2] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
    r = f2obo.drift.Rng(42)
    draws = [r.uniform_below(10) for _ in range(20000)]
    assert set(draws) == set(range(10))
    assert abs(np.mean(draws) - 4.5) < 0.1
    assert all(0.0 <= f2obo.drift.Rng(s).uniform01() < 1.0 for s in range(100))


def test_lround_rounds_halves_away_from_zero():
    lr = f2obo.drift._lround
    assert [lr(0.5), lr(1.5), lr(2.5), lr(2.4999999999999996), lr(0.49999999999999994)] == \
        [1, 2, 3, 2, 0]


def test_drifting_stream_follows_its_schedule():
    X = np.arange(4000.0).reshape(2000, 2)
    y = np.arange(2000) % 4
    s = f2obo.DriftingStream(X, y, rows_per_step=400, imbalance=(0.5, 1.0), phase_steps=3,
                             label_noise={5: 1.0}, seed=3)
    (u1, uy1), (i1, iy1) = s[1]
    assert len(uy1) == len(iy1) == 200 and u1.shape == (200, 2)
    assert np.array_equal(y[(u1[:, 0] // 2).astype(int)], uy1)  # rows keep their labels
    counts = np.bincount(np.concatenate([uy1, iy1]), minlength=4)
    assert counts[0] > counts[1] > counts[2] > counts[3]  # kept w.p. 0.5^i in phase 1
    assert s.keep_probability(4, 3) == 1.0 and s.keep_probability(3, 2) == 0.25
    (u5, uy5), (i5, iy5) = s[5]  # inner labels all redrawn from step 5 on, upper kept
    assert np.array_equal(y[(u5[:, 0] // 2).astype(int)], uy5)
    assert not np.array_equal(y[(i5[:, 0] // 2).astype(int)], iy5)
    again = f2obo.DriftingStream(X, y, rows_per_step=400, imbalance=(0.5, 1.0), phase_steps=3,
                                 label_noise={5: 1.0}, seed=3)
    assert np.array_equal(again[5][1][0], i5) and np.array_equal(again[5][1][1], iy5)
    assert [t for t, _ in zip(range(1, 4), s.steps(1, 3))] == [1, 2, 3]


def test_an_imbalance_that_keeps_no_rows_raises_instead_of_spinning():
    # Integer targets of a regression set (25 .. 346) read as classes: rho^i
    # keeps almost nothing.  As the CLI's sampler: bounded draws, a reason.
    X = np.ones((400, 2))
    y = np.array([25 + i % 322 for i in range(400)])
    with pytest.raises(ValueError, match=r"kept 0 of 8 rows in 8000 draws: with rho = 0.6"):
        f2obo.DriftingStream(X, y, rows_per_step=8, imbalance=(0.6,))[1]
    assert f2obo.DriftingStream(X, y.astype(float), rows_per_step=8, imbalance=(0.6,))[1]


def test_a_proxy_reset_is_unavailable_anything_else_keeps_its_code():
    class Reset(grpc.RpcError):
        def __init__(self, code, details):
            self._code, self._details = code, details

        def code(self):
            return self._code

        def details(self):
            return self._details

    e = errors.from_rpc_error(Reset(grpc.StatusCode.INTERNAL,
                                    "Received RST_STREAM with error code 2"))
    assert isinstance(e, f2obo.Unavailable) and "proxy reset" in e.message
    assert isinstance(errors.from_rpc_error(Reset(grpc.StatusCode.INTERNAL, "a bug")),
                      f2obo.Internal)


# ------------------------------------------------------------ routing

def test_every_rpc_declares_a_role_and_its_routing():
    from f2obo import _routing
    from f2obo._stubs import policy_pb2
    methods = list(_routing._SERVICE.methods)
    assert methods
    for m in methods:
        policy = _routing.policy(m.name)
        assert policy.role != policy_pb2.RpcPolicy.ROLE_UNSPECIFIED, m.name
        assert bool(policy.routing_fields) != policy.unrouted, m.name


def test_each_routing_field_of_each_rpc_gives_the_routed_id():
    from google.protobuf import symbol_database
    from f2obo import _routing

    def request_of(method):
        # By full name: a request may be declared in an imported file
        # (transfer.proto's streamed export and import), not in f2obo_pb2.
        return symbol_database.Default().GetSymbol(method.input_type.full_name)()

    routed = 0
    for m in _routing._SERVICE.methods:
        assert _routing.routed_id(m.name, request_of(m)) == "", m.name
        for path in _routing.policy(m.name).routing_fields:
            request = request_of(m)
            *parents, last = path.split(".")
            message = request
            for name in parents:
                message = getattr(message, name)
            setattr(message, last, "key.member")
            assert _routing.routed_id(m.name, request) == "key.member", (m.name, path)
            routed += 1
    assert routed > 0
    # The first field set wins: an import renamed routes by its new id.
    exported = pb.ImportSessionRequest(session=pb.SessionExport(session_id="old"))
    assert _routing.routed_id("ImportSession", exported) == "old"
    exported.session_id = "new.x"
    assert _routing.routed_id("ImportSession", exported) == "new.x"
    assert _routing.routing_key("new.x") == "new"
