"""nginx in front of app processes, for tests/test_proxy.py and benchmarks/bench_classroom.py --processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request

from deploy.nginx_conf import nginx_conf
from harness.browser import free_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


class Proxy:
    """nginx in the foreground, configured for `backends`, listening on a free loopback port."""

    def __init__(self, tmp, backends: list[str]):
        self.prefix = tmp / "nginx"
        self.prefix.mkdir()
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            nginx_conf(
                f"127.0.0.1:{self.port}",
                backends,
                prefix=str(self.prefix),
                user="root" if os.geteuid() == 0 else None,
                workers=1,
            )
        )  # one round-robin turn
        self.process = subprocess.Popen(
            [NGINX, "-p", str(self.prefix), "-e", str(self.prefix / "error.log"), "-c", str(conf), "-g", "daemon off;"],
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(self.origin + "/_stcore/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nginx did not start: {(self.prefix / 'error.log').read_text(errors='replace')}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
