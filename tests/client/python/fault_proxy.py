"""A gRPC proxy on loopback that loses replies, to test exactly-once
resumption deterministically.

Every f2obo.v1.F2obo call is forwarded as raw bytes to the real server.
For the step streams (Steps, StepsGroup) the proxy can be told to break a
stream after a given number of requests: it forwards those requests, waits
for the server's replies (so the steps are applied and durable), then
drops the replies and ends the stream with UNAVAILABLE, which is what a
client sees when the connection dies after the server applied its steps.
"""
import threading
from concurrent import futures

import grpc

_STREAMS = ("/f2obo.v1.F2obo/Steps", "/f2obo.v1.F2obo/StepsGroup")


def _raw(x):
    return x


class FaultProxy:
    def __init__(self, upstream):
        self._channel = grpc.insecure_channel(upstream)
        self._lock = threading.Lock()
        self._break_after = []  # per future stream: requests answered before breaking
        self.swallowed = 0       # replies dropped so far
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self._server.add_generic_rpc_handlers([_Handler(self)])
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def break_next_stream(self, answered, swallowed):
        """The next step stream answers `answered` requests, then forwards
        `swallowed` more to the server, drops their replies and fails."""
        with self._lock:
            self._break_after.append((answered, swallowed))

    def _plan(self):
        with self._lock:
            return self._break_after.pop(0) if self._break_after else None

    def close(self):
        self._server.stop(None)
        self._channel.close()


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, proxy):
        self.proxy = proxy

    def service(self, details):
        method = details.method
        channel = self.proxy._channel
        metadata = tuple((k, v) for k, v in details.invocation_metadata
                         if k not in ("user-agent",) and not k.startswith(":"))
        if method in _STREAMS:
            upstream = channel.stream_stream(method, _raw, _raw)
            return grpc.stream_stream_rpc_method_handler(
                lambda requests, context: self._stream(upstream, requests, context, metadata),
                _raw, _raw)
        if method.endswith("/WatchMetrics"):
            upstream = channel.unary_stream(method, _raw, _raw)
            return grpc.unary_stream_rpc_method_handler(
                lambda request, context: upstream(request, metadata=metadata), _raw, _raw)
        upstream = channel.unary_unary(method, _raw, _raw)
        return grpc.unary_unary_rpc_method_handler(
            lambda request, context: self._unary(upstream, request, context, metadata),
            _raw, _raw)

    @staticmethod
    def _unary(upstream, request, context, metadata):
        try:
            return upstream(request, metadata=metadata)
        except grpc.RpcError as e:
            context.abort(e.code(), e.details())

    def _stream(self, upstream, requests, context, metadata):
        plan = self.proxy._plan()
        outbox = []
        cv = threading.Condition()
        done = object()

        def pump():  # the client's requests, as they come
            for r in requests:
                with cv:
                    outbox.append(r)
                    cv.notify()
            with cv:
                outbox.append(done)
                cv.notify()

        def upstream_requests():
            while True:
                with cv:
                    cv.wait_for(lambda: outbox)
                    r = outbox.pop(0)
                if r is done:
                    return
                yield r
        threading.Thread(target=pump, daemon=True).start()
        replies = upstream(upstream_requests(), metadata=metadata)
        count = 0
        try:
            for reply in replies:
                count += 1
                if plan is not None and count > plan[0]:
                    self.proxy.swallowed += 1
                    if count == plan[0] + plan[1]:
                        replies.cancel()
                        context.abort(grpc.StatusCode.UNAVAILABLE,
                                      "fault proxy: connection lost after %d replies" % plan[0])
                    continue
                yield reply
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                context.abort(e.code(), e.details())
