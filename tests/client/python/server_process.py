"""A real f2obo-server process on a free loopback port, for the Python tests
(the counterpart of tests/server/server_process.cc).

The server binds --listen=127.0.0.1:0 and announces the port it got on its
first stdout line, which start() waits for; restart() binds the same port
again on the same data directory, so a client's channel reconnects to the
new process.
"""
import os
import re
import signal
import subprocess
import tempfile

_BANNER = re.compile(r"listening on [^ ]+:(\d+), metrics on [^ ]+:(\d+)/metrics")


class ServerProcess:
    def __init__(self, binary, data_dir=None, flags=()):
        self.binary = binary
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="f2obo-py-")
            data_dir = os.path.join(self._tmp.name, "data")
        self.data_dir = data_dir
        self.flags = list(flags)
        self.port = 0
        self.metrics_port = 0
        self.proc = None
        self.stderr_path = data_dir.rstrip("/") + "-stderr.log"
        self.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        """Starts the server (on self.port if set, else a free port)."""
        assert self.proc is None, "already running"
        args = [self.binary, "--listen=127.0.0.1:%d" % self.port,
                "--metrics_listen=127.0.0.1:0", "--data_dir=" + self.data_dir] + self.flags
        with open(self.stderr_path, "a") as err:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.proc.stdout.readline()  # printed once the server serves
        m = _BANNER.search(line)
        if not m:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise RuntimeError("f2obo-server did not start: %r\n%s" % (line, self.stderr()))
        self.port, self.metrics_port = int(m.group(1)), int(m.group(2))

    def kill(self):
        """SIGKILL, as a crash: nothing is flushed or shut down."""
        return self.stop(signal.SIGKILL)

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig`, waits, returns the exit status (negative: the signal)."""
        if self.proc is None:
            return None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.proc = None
        return code

    def restart(self):
        """A new process on the same port and data directory."""
        self.start()

    def stderr(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def close(self):
        if self.proc is not None:
            self.kill()
        if self._tmp is not None:
            self._tmp.cleanup()
