#!/usr/bin/env python3
"""json.dumps oracle: what Python's json.dumps(value, ensure_ascii=False) writes, as mlx_lm.server
writes a tool call's arguments (ToolCallFormatter._format).

  json_dumps_oracle.py SPEC.json
      SPEC: {"values": [TAGGED, ...]} where TAGGED rebuilds a Python value exactly:
        {"t": "null"} | {"t": "bool", "v": true} | {"t": "int", "v": "123"} (decimal text)
        | {"t": "float", "v": "0x1.8p+1"} (float.fromhex; also "inf", "-inf", "nan")
        | {"t": "str", "v": "..."} | {"t": "list", "v": [TAGGED, ...]}
        | {"t": "dict", "v": [[KEY_TAGGED, TAGGED], ...]}
      Prints {"dumps": [str, ...]} (ensure_ascii=True transport, so any text round-trips).
"""

import json
import sys
from pathlib import Path


def build(t):
    kind = t["t"]
    if kind == "null":
        return None
    if kind == "bool":
        return bool(t["v"])
    if kind == "int":
        return int(t["v"])
    if kind == "float":
        v = t["v"]
        return float(v) if v in ("inf", "-inf", "nan") else float.fromhex(v)
    if kind == "str":
        return t["v"]
    if kind == "list":
        return [build(x) for x in t["v"]]
    if kind == "dict":
        return {build(k): build(v) for k, v in t["v"]}
    raise ValueError(f"unknown tag {kind!r}")


def main():
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = [json.dumps(build(v), ensure_ascii=False) for v in spec["values"]]
    json.dump({"dumps": out}, sys.stdout, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
