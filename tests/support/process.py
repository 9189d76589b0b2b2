"""A fixture process running on its own, for attaching to."""

import json
import os
import subprocess
import time

from .debuggers import allow_core_dumps


class RunningFixture:
    """`core_dumps`: the kernel may write a core (into `workdir`, the process's cwd, with
    this machine's core_pattern `core`). `launcher`: a command that ends by exec'ing the
    fixture, so that its pid is the fixture's."""

    def __init__(self, binary, mode, workdir, extra_args=(), env=None, core_dumps=False, launcher=()):
        self.manifest_path = os.path.join(workdir, "manifest.json")
        # A manifest left from an earlier run would be taken for this one's.
        if os.path.exists(self.manifest_path):
            os.unlink(self.manifest_path)
        env = dict(os.environ, FIXTURE_MANIFEST=self.manifest_path, **(env or {}))
        self.process = subprocess.Popen(
            [*launcher, binary, mode, *extra_args],
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=allow_core_dumps if core_dumps else None,
        )
        self.manifest = self._wait_for_manifest()

    def _wait_for_manifest(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.manifest_path):
                with open(self.manifest_path) as manifest:
                    return json.load(manifest)
            if self.process.poll() is not None:
                raise RuntimeError("fixture exited early: %s" % self.process.stderr.read())
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("fixture wrote no manifest within %.0fs" % timeout)

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
