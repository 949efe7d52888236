"""Build hook: generates f2obo/v1/*_pb2*.py(i) from the proto while building.

The stubs are never committed: every build (pip install, pip wheel, an
editable install) runs Debian's protoc with grpc_python_plugin on
proto/f2obo/v1/*.proto, so the package a user gets always matches the
proto it was built from (tests/client/python/test_stubs.py checks it).

Where the proto is: $F2OBO_PROTO_DIR, else ../../proto next to this file
(the repository layout).  Tools: $PROTOC (default: protoc on PATH) and
$GRPC_PYTHON_PLUGIN (default: grpc_python_plugin on PATH).
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = "f2obo/v1/f2obo.proto"


def _proto_dir():
    proto_dir = os.environ.get("F2OBO_PROTO_DIR") or os.path.join(HERE, "..", "..", "proto")
    return os.path.abspath(proto_dir)


def _protos(proto_dir):
    """The names of every .proto file of the package f2obo.v1 (f2obo.proto
    imports the others)."""
    names = os.listdir(os.path.join(proto_dir, "f2obo", "v1"))
    return sorted(name[:-len(".proto")] for name in names if name.endswith(".proto"))


def _generated(proto_dir):
    return tuple(name + suffix for name in _protos(proto_dir)
                 for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))


def _tool(env, name):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise SystemExit(
            "f2obo: %s not found (Debian: apt-get install protobuf-compiler "
            "protobuf-compiler-grpc), or set $%s" % (name, env))
    return path


def generate_stubs(out_dir):
    """protoc -> out_dir/f2obo/v1/<name>_pb2.py, _pb2.pyi, _pb2_grpc.py per proto."""
    proto_dir = _proto_dir()
    if not os.path.isfile(os.path.join(proto_dir, PROTO)):
        raise SystemExit("f2obo: %s not found under %s; build from the repository "
                         "(client/python) or set $F2OBO_PROTO_DIR" % (PROTO, proto_dir))
    os.makedirs(os.path.join(out_dir, "f2obo", "v1"), exist_ok=True)
    subprocess.check_call([
        _tool("PROTOC", "protoc"), "-I", proto_dir,
        "--python_out=" + out_dir, "--pyi_out=" + out_dir,
        "--plugin=protoc-gen-grpc_python=" + _tool("GRPC_PYTHON_PLUGIN", "grpc_python_plugin"),
        "--grpc_python_out=" + out_dir] +
        [os.path.join(proto_dir, "f2obo", "v1", name + ".proto") for name in _protos(proto_dir)])
    with open(os.path.join(out_dir, "f2obo", "v1", "__init__.py"), "w") as f:
        f.write('"""Generated from proto/f2obo/v1/*.proto at build time; not edited."""\n')


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        # An editable install imports from the source tree, so the stubs go
        # there (git-ignored); otherwise into the build tree only.
        generate_stubs(HERE if getattr(self, "editable_mode", False) else self.build_lib)

    def get_outputs(self, include_bytecode=True):
        stubs = [os.path.join(self.build_lib, "f2obo", "v1", name) for name in
                 ("__init__.py",) + _generated(_proto_dir())]
        return super().get_outputs(include_bytecode) + stubs


setup(cmdclass={"build_py": BuildPyWithStubs})
