"""The panels' pollers: many open lender panels each asking for their order's progress, over raw sockets.

Run in its own process (`python -m bench.panel_load ...`) so that it never shares an interpreter
with the server it measures. It reads a JSON file of `[path, panel session token]` pairs, one per
open panel, and runs one poller per panel for `--seconds`:

- `--interval S` (the page's own pace, 3 s): poller i asks first at start + i*S/n, then every S
  seconds on that schedule; each latency counts from when the poll was *due*, so a server that
  falls behind shows its queue (no coordinated omission);
- `--interval 0`: closed loop, each poller asks again as soon as it has its answer.

Each poll is `GET <path>` with `X-Panel-Session` and `Connection: close` (gunicorn's sync workers
close every connection anyway); the answer is read to its end. Writes the status, latency and end
time of every poll, and this process's CPU time, to a JSON file.
"""

import argparse
import asyncio
import json
import time
from pathlib import Path


def request_bytes(*, host: str, path: str, token: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\n"
        f"Host: {host}\r\n"
        "Accept: application/json\r\n"
        f"X-Panel-Session: {token}\r\n"
        "Connection: close\r\n"
        "\r\n"
    ).encode("latin-1")


async def _poll(host: str, port: int, request: bytes) -> int:
    """One poll on a fresh connection; its HTTP status (0: no answer)."""
    writer = None
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(request)
        answer = await reader.read()  # to the end: the server closes
        return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    except (OSError, ValueError, IndexError):
        return 0
    finally:
        if writer is not None:
            writer.close()


async def run(*, host: str, port: int, requests: list[bytes], seconds: float, interval: float) -> dict:
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + seconds
    polls: list[tuple[int, float, float]] = []  # status, latency, end (s after start)

    async def poller(number: int) -> None:
        due = started + (number * interval / len(requests) if interval else 0.0)
        while due < deadline:
            if interval:
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                begin = due
            else:
                begin = loop.time()
            status = await _poll(host, port, requests[number])
            end = loop.time()
            polls.append((status, end - begin, end - started))
            due = due + interval if interval else end

    await asyncio.gather(*(poller(number) for number in range(len(requests))))
    return {"polls": polls, "elapsed": loop.time() - started}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--input", type=Path, required=True, help="JSON list of [path, token]")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between a panel's polls; 0: closed loop")
    args = parser.parse_args(argv)

    pairs = json.loads(args.input.read_text())
    host = f"{args.host}:{args.port}"
    requests = [request_bytes(host=host, path=path, token=token) for path, token in pairs]
    clock = time.process_time()
    result = asyncio.run(
        run(host=args.host, port=args.port, requests=requests, seconds=args.seconds, interval=args.interval)
    )
    result["generator_cpu_seconds"] = time.process_time() - clock
    args.output.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
