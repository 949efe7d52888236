"""The generated protobuf and gRPC modules (built from proto/ at install
time by setup.py; never committed)."""
try:
    from .v1 import f2obo_pb2 as pb  # noqa: F401
    from .v1 import f2obo_pb2_grpc as pb_grpc  # noqa: F401
    from .v1 import rpc_policy_pb2 as policy_pb2  # noqa: F401
    from .v1 import transfer_pb2  # noqa: F401
except ImportError as e:  # pragma: no cover - a source tree without a build
    raise ImportError(
        "f2obo: the generated stubs (f2obo.v1.f2obo_pb2) are missing: install the package "
        "(pip install --no-build-isolation --no-deps ./client/python) instead of importing "
        "it from the source tree (%s)" % e) from e

__all__ = ["pb", "pb_grpc", "policy_pb2", "transfer_pb2"]
