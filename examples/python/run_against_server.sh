#!/usr/bin/env bash
# Test driver: generates Python stubs with Debian's grpc_python_plugin, starts
# a real f2obo-server on a free loopback port and runs the example against it.
# Usage: run_against_server.sh SERVER_BINARY PROTO_DIR
set -euo pipefail
server="$1"
proto_dir="$2"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
protoc -I "$proto_dir" --python_out="$work" --grpc_out="$work" \
  --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" "$proto_dir/f2obo/v1/f2obo.proto"
mkfifo "$work/banner"
"$server" --listen=127.0.0.1:0 --metrics_listen= --data_dir="$work/data" > "$work/banner" &
pid=$!
read -r line < "$work/banner"
port="$(echo "$line" | sed -E 's/.*listening on [^ ]+:([0-9]+),.*/\1/')"
PYTHONPATH="$work" /usr/bin/python3 "$(dirname "$0")/f2obo_quadratic.py" --server "127.0.0.1:$port"
kill -TERM "$pid"
wait "$pid"
