#!/usr/bin/python3
"""Drive f2obo from Python: create a session, stream steps, read the decision.

Stubs come from Debian's protoc and grpc_python_plugin (see README):

    protoc -I proto --python_out=OUT --grpc_out=OUT \
        --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin proto/f2obo/v1/f2obo.proto
    PYTHONPATH=OUT /usr/bin/python3 examples/python/f2obo_quadratic.py --server 127.0.0.1:50051

The problem is the `quadratic` family: g_t(x, y) = (mu/2)||y - (M x + c)||^2,
f_t(x, y) = (1/2)||y - d||^2, static, so the hypergradient is
grad F(x) = M^T (M x + c - d) and x_t must approach the least-squares
solution of M x = d - c.  The script checks that it does and exits non-zero
otherwise, so it doubles as an end-to-end test of the Python path.
"""
import argparse
import sys

import grpc

from f2obo.v1 import f2obo_pb2 as pb
from f2obo.v1 import f2obo_pb2_grpc as rpc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="127.0.0.1:50051")
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()

    stub = rpc.F2oboStub(grpc.insecure_channel(args.server))
    # M = diag(1, 2) (d2 = d1 = 2), c = 0, d = (1, 1): the minimizer is x* = (1, 0.5).
    spec = pb.SessionSpec(
        family=pb.FamilySpec(name="quadratic", x_dim=2, y_dim=2, mu=1.0),
        algorithm="f2obo",
        options=pb.AlgorithmOptions(inner_steps=10, alpha=1.0, beta=0.5, gamma=0.1),
    )
    session = stub.CreateSession(pb.CreateSessionRequest(spec=spec))
    print("created session", session.session_id, "algorithm", session.spec.algorithm)

    def requests():
        for t in range(1, args.steps + 1):
            yield pb.StepRequest(
                session_id=session.session_id,
                t=t,
                upper=pb.Batch(d=[1.0, 1.0]),
                inner=pb.Batch(m=pb.DenseMatrix(rows=2, cols=2, values=[1, 0, 0, 2]),
                               c=[0.0, 0.0]),
            )

    last = None
    for reply in stub.Steps(requests()):  # bidirectional stream, one reply per step
        last = reply
    print("t =", last.t, "x =", list(last.x), "lambda =", round(getattr(last.report, "lambda"), 3))

    decision = stub.GetDecision(pb.GetDecisionRequest(session_id=session.session_id))
    err = max(abs(decision.x[0] - 1.0), abs(decision.x[1] - 0.5))
    print("decision at t =", decision.t, "x =", list(decision.x), "error", err)

    # A skipped index is refused with the expected one named.
    try:
        stub.Step(pb.StepRequest(session_id=session.session_id, t=decision.t + 5))
        print("expected FAILED_PRECONDITION")
        return 1
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.FAILED_PRECONDITION, e
        print("skipped index refused:", e.details())

    stub.DeleteSession(pb.DeleteSessionRequest(session_id=session.session_id))
    return 0 if err < 1e-3 and decision.t == args.steps + 1 else 1


if __name__ == "__main__":
    sys.exit(main())
