"""Soak client for scripts/soak.sh: many streamed completions, most of them abandoned mid-stream.

Stdlib only. Each request is a streaming /v1/completions or /v1/chat/completions call over a raw
socket (so a disconnect is a real one): with probability --disconnect, the client reads a random
number of SSE events (0 = none, i.e. while the request is queued or prefilling) and then closes,
half the time with an RST (SO_LINGER 0) and half with a FIN; otherwise it reads to `data: [DONE]`.
/metrics is scraped after the warm-up, at every quarter and at the end (once the engine is idle).
Prints one JSON object: the counts, the checkpoints and the pass/fail checks with their tolerances.
"""
import argparse
import json
import random
import socket
import struct
import sys
import threading
import time

PROMPTS = ["Once upon a time", "The capital of France is", "List three colors:", "Explain gravity briefly.",
           "Write a haiku about rain.", "What is 2 + 2?", "Tell me a joke.", "Name a famous scientist."]


def scrape(host, port):
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(f"GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if b"Transfer-Encoding: chunked" in head:
        out, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    series = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            series[name] = float(value)
    return series


def figures(m):
    return {
        "mlx_active_bytes": m.get("mlxring_mlx_active_memory_bytes"),
        "mlx_idle_baseline_bytes": m.get("mlxring_mlx_idle_baseline_bytes"),
        "kv_bytes_in_use": m.get("mlxring_kv_bytes_in_use"),
        "rss_bytes": m.get("process_resident_memory_bytes"),
        "direct_bytes": m.get('jvm_buffer_pool_used_bytes{pool="direct"}'),
        "heap_used_bytes": m.get('jvm_memory_used_bytes{area="heap"}'),
        "live_sessions": m.get("mlxring_live_sessions"),
        "admitted_sessions": m.get("mlxring_admitted_sessions"),
        "queue_depth": m.get("mlxring_queue_depth"),
        "active_rows": m.get("mlxring_active_rows"),
        "completions": {o: m.get(f'mlxring_completions_total{{outcome="{o}"}}', 0)
                        for o in ("completed", "cancelled", "failed")},
    }


def one_request(host, port, rng, args):
    chat = rng.random() < 0.5
    max_tokens = rng.randint(args.min_tokens, args.max_tokens)
    prompt = rng.choice(PROMPTS)
    if chat:
        path, body = "/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}]}
    else:
        path, body = "/v1/completions", {"prompt": prompt}
    body.update({"max_tokens": max_tokens, "stream": True})
    payload = json.dumps(body).encode()
    disconnect = rng.random() < args.disconnect
    read_events = rng.randint(0, max_tokens - 1) if disconnect else None
    rst = rng.random() < 0.5
    s = socket.create_connection((host, port), timeout=300)
    try:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
        if read_events == 0:
            return "disconnected"
        f = s.makefile("rb")
        status = f.readline().split()
        code = int(status[1]) if len(status) > 1 else 0
        if code != 200:
            return f"status_{code}"
        events = 0
        done = False
        for line in f:
            if line.startswith(b"data: "):
                events += 1
                if line.startswith(b"data: [DONE]"):
                    done = True
                    break
                if read_events is not None and events >= read_events:
                    return "disconnected"
        return "completed" if done else "truncated"
    finally:
        if rst:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()


def wait_idle(host, port, timeout_s, mlx_target=None, tolerance=0):
    """Waits until the engine holds no session (and, given mlx_target, until MLX active memory is
    back within tolerance of it: a run's last pipelined step may still be evaluating for a moment
    after its session settled, and MLX frees its buffers when it completes)."""
    deadline = time.time() + timeout_s
    start = time.time()
    while True:
        m = scrape(host, port)
        idle = (m.get("mlxring_live_sessions") == 0 and m.get("mlxring_queue_depth") == 0
                and m.get("mlxring_active_rows") == 0)
        mem = mlx_target is None or abs(m.get("mlxring_mlx_active_memory_bytes") - mlx_target) <= tolerance
        if idle and mem:
            return m, True, round(time.time() - start, 2)
        if time.time() > deadline:
            return m, False, round(time.time() - start, 2)
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--disconnect", type=float, default=0.8)
    ap.add_argument("--min-tokens", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checkpoints", type=int, default=10, help="scrapes during the run (progress on stderr)")
    ap.add_argument("--rss-tolerance-mib", type=float, default=64)
    ap.add_argument("--direct-tolerance-mib", type=float, default=1)
    ap.add_argument("--mlx-tolerance-bytes", type=float, default=0)
    args = ap.parse_args()
    host, port = args.host, args.port
    if host not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("soak_client: loopback only")

    rng = random.Random(args.seed)
    for _ in range(args.warmup):   # JIT, MLX allocator and the compiled kernels warm before any baseline
        one_request(host, port, random.Random(rng.random()), argparse.Namespace(**{**vars(args), "disconnect": 0}))
    warm, _, _ = wait_idle(host, port, 120, mlx_target=None)
    # The warm baseline: idle, and MLX memory settled (two equal readings in a row).
    while True:
        again, _, _ = wait_idle(host, port, 120)
        if again.get("mlxring_mlx_active_memory_bytes") == warm.get("mlxring_mlx_active_memory_bytes"):
            break
        warm = again
        time.sleep(0.5)
    checkpoints = [{"after": 0, **figures(warm)}]

    outcomes = {}
    lock = threading.Lock()
    next_index = [0]
    seeds = [rng.random() for _ in range(args.requests)]
    every = max(1, args.requests // args.checkpoints)
    started = time.time()

    def worker():
        while True:
            with lock:
                i = next_index[0]
                if i >= args.requests:
                    return
                next_index[0] += 1
            try:
                r = one_request(host, port, random.Random(seeds[i]), args)
            except OSError as e:
                r = "error_" + type(e).__name__
            with lock:
                outcomes[r] = outcomes.get(r, 0) + 1
                done = sum(outcomes.values())
                if done % every == 0 and done < args.requests:
                    checkpoints.append({"after": done, "elapsed_s": round(time.time() - started, 1),
                                        "outcomes": dict(outcomes), **figures(scrape(host, port))})
                    print(json.dumps(checkpoints[-1]), file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - started
    target = warm.get("mlxring_mlx_active_memory_bytes")
    final, idle, settle_s = wait_idle(host, port, 120, target, args.mlx_tolerance_bytes)
    checkpoints.append({"after": args.requests, "settled_after_s": settle_s, **figures(final)})
    # The server still answers a whole request afterwards.
    after = one_request(host, port, random.Random(7), argparse.Namespace(**{**vars(args), "disconnect": 0}))
    final2, idle2, settle2_s = wait_idle(host, port, 120, target, args.mlx_tolerance_bytes)

    w, f = checkpoints[0], figures(final2)
    # Growth is judged from the first checkpoint of the run on: the first requests still grow the
    # heap, the JIT's code cache and malloc arenas to their working size.
    first_quarter = checkpoints[1] if len(checkpoints) > 2 else w
    mib = 1024 * 1024
    checks = {
        "engine idle (live sessions, queue, rows = 0) and MLX memory settled within 120 s": idle and idle2,
        "admitted sessions = 0": f["admitted_sessions"] == 0,
        f"MLX active memory back to the warm baseline (within {args.mlx_tolerance_bytes:.0f} B)":
            abs(f["mlx_active_bytes"] - w["mlx_active_bytes"]) <= args.mlx_tolerance_bytes,
        f"RSS growth from the first checkpoint to the end within {args.rss_tolerance_mib:.0f} MiB":
            f["rss_bytes"] - first_quarter["rss_bytes"] <= args.rss_tolerance_mib * mib,
        f"direct buffers growth within {args.direct_tolerance_mib:.0f} MiB":
            f["direct_bytes"] - w["direct_bytes"] <= args.direct_tolerance_mib * mib,
        "a full request succeeds afterwards": after == "completed",
        "no unexpected outcomes": set(outcomes) <= {"completed", "disconnected"},
        "no completion failed on the server": f["completions"]["failed"] == 0,
    }
    print(json.dumps({"requests": args.requests, "concurrency": args.concurrency, "elapsed_s": round(elapsed, 1),
                      "outcomes": outcomes,
                      "checkpoints": checkpoints + [{"after": "after-check", "settled_after_s": settle2_s, **f}],
                      "checks": checks, "ok": all(checks.values())}, indent=1))
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
