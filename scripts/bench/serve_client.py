"""A `mlx-ring serve` started for a benchmark, and streaming chat requests against it.

Shared by the benchmarks that drive the real server over HTTP (head_of_line.py,
structured_outputs.py): one way to start it, wait for /health, stop it, and read a stream's
content-token arrival times.
"""

import json
import os
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def served(model, port, flags=(), launcher=None, cwd=ROOT, ready_s=300):
    """`mlx-ring serve --model MODEL --port PORT FLAGS...`, ready (GET /health 200) inside the block.

    `launcher` replaces the command before `serve` (default: this checkout's `mlx-ring`), e.g. a
    `java ... dev.mlxring.ingress.cli.Main` line of another checkout's jars, run in `cwd`.
    """
    base = "http://127.0.0.1:%d" % port
    command = list(launcher) if launcher else [str(ROOT / "mlx-ring")]
    # SERVE_LOG=PATH keeps the server's stderr (e.g. its -Dmlxring.unitTrace=true lines).
    log = open(os.environ["SERVE_LOG"], "ab") if os.environ.get("SERVE_LOG") else subprocess.DEVNULL
    proc = subprocess.Popen([*command, "serve", "--model", model, "--port", str(port), *flags],
                            stdout=subprocess.DEVNULL, stderr=log, cwd=cwd)
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError("serve exited with %s" % proc.returncode)
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve did not become ready")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def chat(base, body, stream):
    """POST /v1/chat/completions: the parsed answer, or (streaming) the content tokens' arrival times."""
    body = dict(body, model="default_model", stream=stream)
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1800) as resp:
        if not stream:
            return json.loads(resp.read())
        times = []
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            choices = json.loads(line[5:]).get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                times.append(time.monotonic())
        return times
