"""The bench's gRPC load generator: what wrk is for the HTTP scenarios, for ``SendMessage``.

    python bench/grpc_load.py ADDRESS TENANT SECONDS CONCURRENCY CHANNELS TEXT NONCE

``CONCURRENCY`` callers share ``CHANNELS`` channels (HTTP/2 connections, round robin), each
sending blocking ``lf.a2a.v1.A2AService/SendMessage`` calls (metadata ``a2a-version: 1.0``)
back to back for ``SECONDS``.
Every request is the same message with a fresh ``message_id`` (``<nonce>-<caller>-<n>``), as
wrk's script does.  A response counts as good only if it is a task in
``TASK_STATE_COMPLETED`` whose first artifact says ``echo: <TEXT>``.  Requests go out as
pre-built bytes and answers are parsed once (upb, C), so the client spends its CPU on gRPC
itself.  Prints one ``WRKJSON {...}`` line with wrk's fields (latencies in microseconds) and,
after a bad answer, ``WRKBAD <what>``.  Runs with a2a-hub's venv (grpcio and a2a-hub's
generated protobuf modules).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import grpc

from a2a_hub.server.grpc._generated import a2a_pb2 as pb

METHOD = "/lf.a2a.v1.A2AService/SendMessage"
#: Sent with every call: the JavaScript SDK takes a call without it for 0.3 (which its 1.0
#: service refuses); a2a-hub serves an absent or 1.x version, the Python SDK's gRPC handler
#: does not look at it.
VERSION = (("a2a-version", "1.0"),)


def percentile(sorted_values: list[int], pct: float) -> int:
    if not sorted_values:
        return 0
    index = min(len(sorted_values) - 1, round(pct / 100 * (len(sorted_values) - 1)))
    return sorted_values[index]


async def main() -> None:
    address, tenant = sys.argv[1], sys.argv[2]
    seconds, concurrency, channels = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    text, nonce = sys.argv[6], sys.argv[7]
    expected = f"echo: {text}"
    pools = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    calls = [ch.unary_unary(METHOD) for ch in pools]  # bytes in, bytes out
    template = pb.SendMessageRequest(
        tenant=tenant,
        message=pb.Message(message_id="", role=pb.ROLE_USER, parts=[pb.Part(text=text)]),
    )
    latencies: list[int] = []
    counts = {"requests": 0, "ok": 0, "bad": 0, "status_errors": 0, "timeouts": 0, "bytes": 0}
    bad_sample = ""
    deadline = time.monotonic() + seconds

    async def caller(n: int) -> None:
        nonlocal bad_sample
        call = calls[n % len(calls)]
        request = pb.SendMessageRequest()
        request.CopyFrom(template)
        i = 0
        while time.monotonic() < deadline:
            i += 1
            request.message.message_id = f"{nonce}-{n}-{i}"
            body = request.SerializeToString()
            t0 = time.perf_counter_ns()
            try:
                raw = await call(body, timeout=10, metadata=VERSION)
            except grpc.aio.AioRpcError as exc:
                counts["requests"] += 1
                if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    counts["timeouts"] += 1
                else:
                    counts["status_errors"] += 1
                    bad_sample = bad_sample or f"{exc.code().name} {exc.details()}"[:300]
                continue
            latencies.append((time.perf_counter_ns() - t0) // 1000)
            counts["requests"] += 1
            counts["bytes"] += len(raw)
            answer = pb.SendMessageResponse.FromString(raw)
            task = answer.task
            if (
                task.status.state == pb.TASK_STATE_COMPLETED
                and task.artifacts
                and task.artifacts[0].parts[0].text == expected
            ):
                counts["ok"] += 1
            else:
                counts["bad"] += 1
                bad_sample = bad_sample or str(answer)[:300]

    for ch in pools:
        await ch.channel_ready()
    start = time.monotonic()
    await asyncio.gather(*(caller(n) for n in range(concurrency)))
    duration = time.monotonic() - start
    for ch in pools:
        await ch.close()
    latencies.sort()
    figures = {
        "duration_us": int(duration * 1e6),
        **counts,
        "connect_errors": 0,
        "read_errors": 0,
        "write_errors": 0,
        "lat_mean_us": sum(latencies) / len(latencies) if latencies else 0.0,
        "lat_max_us": latencies[-1] if latencies else 0,
        "lat_p50_us": percentile(latencies, 50),
        "lat_p90_us": percentile(latencies, 90),
        "lat_p99_us": percentile(latencies, 99),
        "lat_p999_us": percentile(latencies, 99.9),
    }
    print("WRKJSON " + json.dumps(figures))
    if bad_sample:
        print("WRKBAD " + bad_sample.replace("\n", " "))


if __name__ == "__main__":
    asyncio.run(main())
