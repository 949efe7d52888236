"""The generated stubs a user gets match what the current proto generates.

The package under test was built by `pip install ./client/python` (CMake
target f2obo_python), whose setup.py ran protoc; here protoc runs again on
the proto in the source tree, and every generated file must be identical,
as must the file descriptor the installed module registers.  Fails when
the proto changed and the package was not rebuilt (or when anyone commits
or edits generated code).
"""
import os
import shutil
import subprocess

import pytest
from google.protobuf import descriptor_pb2

import f2obo
from f2obo.v1 import (f2obo_pb2, group_pb2, metrics_pb2, oracle_pb2, report_pb2, rpc_policy_pb2,
                      scale_out_pb2, session_pb2, spec_pb2, step_pb2, transfer_pb2)

# every proto of f2obo.v1
MODULES = {"f2obo": f2obo_pb2, "group": group_pb2, "metrics": metrics_pb2, "oracle": oracle_pb2,
           "report": report_pb2, "rpc_policy": rpc_policy_pb2, "scale_out": scale_out_pb2,
           "session": session_pb2, "spec": spec_pb2, "step": step_pb2, "transfer": transfer_pb2}
GENERATED = tuple(name + suffix for name in MODULES
                  for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))


def protos(source_dir):
    directory = os.path.join(source_dir, "proto", "f2obo", "v1")
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name.endswith(".proto"))


def protoc(source_dir, *args):
    plugin = shutil.which("grpc_python_plugin")
    assert plugin, "grpc_python_plugin not on PATH (Debian: protobuf-compiler-grpc)"
    proto_dir = os.path.join(source_dir, "proto")
    subprocess.check_call(["protoc", "-I", proto_dir,
                           "--plugin=protoc-gen-grpc_python=" + plugin] + list(args) +
                          protos(source_dir))


def test_every_proto_is_a_module_of_the_package(source_dir):
    names = {os.path.basename(p)[:-len(".proto")] for p in protos(source_dir)}
    assert names == set(MODULES)


def test_installed_stubs_equal_freshly_generated_ones(source_dir, tmp_path):
    protoc(source_dir, "--python_out=%s" % tmp_path, "--pyi_out=%s" % tmp_path,
           "--grpc_python_out=%s" % tmp_path)
    installed = os.path.join(os.path.dirname(f2obo.__file__), "v1")
    for name in GENERATED:
        with open(os.path.join(tmp_path, "f2obo", "v1", name), "rb") as f:
            fresh = f.read()
        with open(os.path.join(installed, name), "rb") as f:
            assert f.read() == fresh, (
                "%s differs from what proto/f2obo/v1/ generates: rebuild the "
                "package (cmake --build build --target f2obo_python)" % name)


def clear_json_names(message):
    for field in message.field:
        field.ClearField("json_name")
    for nested in message.nested_type:
        clear_json_names(nested)


def test_installed_descriptor_equals_the_proto(source_dir, tmp_path):
    out = tmp_path / "f2obo.pb"
    protoc(source_dir, "--descriptor_set_out=%s" % out)
    for fresh in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        for message in fresh.message_type:  # the generated module does not keep json_name
            clear_json_names(message)
        for extension in fresh.extension:
            extension.ClearField("json_name")
        installed = descriptor_pb2.FileDescriptorProto()
        MODULES[os.path.basename(fresh.name)[:-len(".proto")]].DESCRIPTOR.CopyToProto(installed)
        assert installed == fresh, fresh.name


def test_no_generated_code_in_the_source_tree(source_dir):
    package = os.path.join(source_dir, "client", "python", "f2obo")
    tracked = subprocess.run(["git", "-C", source_dir, "ls-files", package],
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    names = {os.path.basename(p) for p in tracked.stdout.split()}
    assert not names & set(GENERATED), "generated stubs are committed: %s" % (
        names & set(GENERATED))
