"""The load generator: many concurrent keep-alive HTTP/1.1 connections posting pre-signed webhooks.

`python -m bench.harness.load ...`, a process of its own: each `[body, signature]` pair of `--input` sent
once to 127.0.0.1 over raw asyncio sockets, each request's status and latency written to `--output`.
`--rate 0`: a closed loop; `--rate R`: request i due at start + i/R, its latency counted from then."""

import argparse
import asyncio
import json
import time
from pathlib import Path

from bench.harness.latency_proxy import framed, read_body, read_head


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """The status of the next answer on `reader`, and whether the server closes the connection after it."""
    answer = await read_head(reader)
    if answer is None:
        raise ConnectionResetError("the server closed the connection")
    await read_body(reader, answer)
    close = answer.first.startswith("HTTP/1.0") or answer.close
    return int(answer.first.split(" ", 2)[1]), close


async def run(*, port: int, requests: list[bytes], concurrency: int, rate: float) -> dict:
    total = len(requests)
    status = [0] * total
    latency = [0.0] * total
    counter = iter(range(total))
    stats = {"connections": 0, "retries": 0, "errors": 0}
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def connection():
        reader = writer = None
        for index in counter:
            begin = started + index / rate if rate else loop.time()
            if begin > loop.time():  # a fixed rate's request not yet due
                await asyncio.sleep(begin - loop.time())
            for attempt in range(2):
                reused = writer is not None
                try:
                    if writer is None:
                        reader, writer = await asyncio.open_connection("127.0.0.1", port)
                        stats["connections"] += 1
                    writer.write(requests[index])
                    code, close = await _read_response(reader)
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                    if writer is not None:
                        writer.close()
                    reader = writer = None
                    if reused and attempt == 0:  # the server closed an idle connection: send again once
                        stats["retries"] += 1
                        continue
                    stats["errors"] += 1
                    code, close = 0, True
                status[index] = code
                latency[index] = loop.time() - begin
                if close and writer is not None:
                    writer.close()
                    reader = writer = None
                break
        if writer is not None:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    elapsed = loop.time() - started
    return {"status": status, "latency": latency, "elapsed": elapsed, **stats}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--input", type=Path, required=True, help="JSON list of [body, signature]")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=float, default=0.0, help="requests per second; 0: as fast as answered")
    args = parser.parse_args(argv)

    pairs = json.loads(args.input.read_text())
    head = [("Host", f"127.0.0.1:{args.port}"), ("Content-Type", "application/json")]
    first = "POST /v1/webhooks HTTP/1.1"
    requests = [framed(first, [*head, ("Svc-Signature", sig)], body.encode(), close=False) for body, sig in pairs]
    clock = time.process_time()
    result = asyncio.run(run(port=args.port, requests=requests, concurrency=args.concurrency, rate=args.rate))
    result["generator_cpu_seconds"] = time.process_time() - clock
    args.output.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
