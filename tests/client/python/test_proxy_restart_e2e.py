"""A Python stream through a real nginx rides out a kill -9 of the replica
holding its session.

Two f2obo-server replicas behind nginx (its config from
deploy/proxy/gen_proxy_config.py, as deploy/ uses).  Mid-stream the holder
is killed: nginx resets the stream (RST_STREAM INTERNAL_ERROR) and, while
the replica is down, answers the proxy's UNAVAILABLE error page.  The
package must read both as "retry", resume at the last acknowledged step,
and apply every step once: the same decision, bit for bit, as the same
stream into a server of its own.
"""
import os
import socket
import subprocess
import time

import pytest

import f2obo
from helpers import batches, classification_data, same_bits

NGINX = "/usr/sbin/nginx"
D, C, STEPS, KILL_AFTER = 6, 3, 40, 10
X, Y = classification_data(rows=400, features=D, classes=C, seed=4)
DATA = batches(X, Y, rows_per_step=32, steps=STEPS, seed=5)
SPEC = dict(family="logistic_hpo", features=D, classes=C, algorithm="f2obo", seed=3,
            exact_every=0)


class Nginx:
    def __init__(self, source_dir, prefix, replicas):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        args = ["/usr/bin/python3", os.path.join(source_dir, "deploy/proxy/gen_proxy_config.py"),
                "nginx", "--listen=127.0.0.1:%d" % self.port, "--prefix=" + prefix]
        if os.geteuid() == 0:
            args.append("--user=root")  # workers must enter the private prefix
        args += ["--replica=%s=%s" % r for r in replicas]
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
        self.proc = subprocess.Popen([NGINX, "-p", prefix, "-c", conf,
                                      "-e", os.path.join(prefix, "error.log")])
        deadline = time.monotonic() + 20
        while True:  # poll until nginx accepts connections (not a wait for an event)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert self.proc.poll() is None, "nginx exited"
                assert time.monotonic() < deadline, "nginx not listening within 20 s"
                time.sleep(0.01)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def holds(server, session_id):
    with f2obo.Client(server.address, retries=0) as c:
        try:
            c.get_session(session_id)
            return True
        except f2obo.NotFound:
            return False


@pytest.mark.skipif(not os.path.exists(NGINX), reason="nginx is not installed")
def test_a_stream_through_nginx_rides_out_a_kill_nine_of_its_replica(start_server, source_dir,
                                                                     tmp_path):
    replicas = [start_server(), start_server()]
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    proxy = Nginx(source_dir, str(prefix), [("r%d" % i, s.address) for i, s in
                                            enumerate(replicas)])
    try:
        with f2obo.Client(proxy.address) as client, \
                f2obo.Client(proxy.address, retries=0) as once:
            session = client.create_session(session_id="ride", **SPEC)
            holder = next(s for s in replicas if holds(s, "ride"))
            seen = []
            for result in session.stream(DATA):
                seen.append(result.t)
                if result.t == KILL_AFTER:
                    holder.kill()
                    # While it is down the proxy says UNAVAILABLE, in words.
                    with pytest.raises(f2obo.Unavailable, match="f2obo proxy: the replica"):
                        once.get_session("ride")
                    holder.restart()
            assert seen == list(range(1, STEPS + 1))  # one reply per step, in order
            mine = session.decision()

        reference = start_server()
        with f2obo.Client(reference.address) as direct:
            straight = direct.create_session(session_id="ride", **SPEC)
            for _ in straight.stream(DATA):
                pass
            theirs = straight.decision()
        assert mine.t == theirs.t == STEPS + 1
        assert same_bits(mine.x, theirs.x) and same_bits(mine.y, theirs.y)
    finally:
        proxy.close()
