"""Instructions per request of the real server: uvicorn, uvloop, httptools and the app, the
client outside valgrind (bench/instructions.py counts the app through an in-process client).

``a2a-hub serve --agent echo --store memory://`` of TREE runs under ``valgrind
--tool=callgrind`` with instrumentation off; a sequential keep-alive client (one
connection) sends WARM requests, instrumentation is switched on (``callgrind_control -i
on``), N requests, off again; the count divided by N is printed.  User-space instructions
only: the kernel's share (system calls) is not in it, see ``strace -c``.  Two runs of a tree
differ by about 0.3 %::

    python3 bench/server_instructions.py /work/main send 300 100    # TREE scenario N WARM
    python3 bench/server_instructions.py /work/main stream 300 100

Needs valgrind (Debian package); about a minute per run.  KEEP=1 keeps the callgrind file.
"""

import glob
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, serve_argv

tree, sc, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
warm = int(sys.argv[4]) if len(sys.argv) > 4 else 200


port = free_port


p = port()
out = tempfile.mktemp(prefix="callgrind-server-")
env = dict(os.environ, PYTHONHASHSEED="0")
proc = subprocess.Popen(
    [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        f"{tree}/.venv/bin/python",
        *serve_argv(f"{tree}/.venv/bin/a2a-hub", p),
    ],
    env=env,
    stdout=subprocess.DEVNULL,
    stderr=open(out + ".log", "w"),
)
try:
    for _ in range(600):
        try:
            c = http.client.HTTPConnection("127.0.0.1", p, timeout=60)
            c.request("GET", "/healthz")
            c.getresponse().read()
            break
        except Exception:
            time.sleep(0.2)
    method = "SendMessage" if sc == "send" else "SendStreamingMessage"
    hdrs = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    if sc == "stream":
        hdrs["Accept"] = "text/event-stream"
    conn = http.client.HTTPConnection("127.0.0.1", p, timeout=120)
    k = [0]

    def go(count):
        for _ in range(count):
            k[0] += 1
            mid = f"m{k[0]}"
            b = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "method": method,
                    "params": {
                        "message": {
                            "messageId": mid,
                            "role": "ROLE_USER",
                            "parts": [{"text": "hello bench"}],
                        }
                    },
                },
                separators=(",", ":"),
            )
            conn.request("POST", "/a2a/echo", b, hdrs)
            r = conn.getresponse()
            data = r.read()
            assert r.status == 200 and b"TASK_STATE_COMPLETED" in data and b'"error"' not in data, (
                data[:300]
            )

    go(warm)
    pid = str(proc.pid)
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    go(n)
    subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
finally:
    proc.terminate()
    proc.wait(timeout=120)
total = int(re.search(r"Collected : (\d+)", open(out + ".log").read()).group(1))
if not os.environ.get("KEEP"):
    [os.remove(f) for f in glob.glob(out + "*")]
else:
    print("kept", out)
print(
    f"{os.path.basename(tree)} {sc}: {total / n / 1e3:.1f} K instructions per request (N={n}, total {total:,})"
)
