"""The platform at its real latency: a reverse proxy in front of the sandbox that answers each call late.

`python -m bench.harness.latency_proxy --port P --upstream 127.0.0.1:Q`: each request under `/sandbox/`
waits `--api-ms` (under `/sandbox/uploads/`, `--upload-ms`) in one asyncio loop, then goes to the sandbox
on a connection of its own; keep-alive towards the client. `Host` passes unchanged (the sandbox's upload
locations name the proxy, so uploads are late too); `X-Forwarded-For` names the caller."""

import argparse
import asyncio
import signal
from dataclasses import dataclass


class Head:
    """A message's first line and headers as they came, and the few this proxy reads, by lower-case
    name (looked up once: this process's CPU is counted as the platform's in the benchmarks)."""

    __slots__ = ("first", "headers", "length", "chunked", "close")

    def __init__(self, first: str, headers: list[tuple[str, str]]):
        self.first, self.headers = first, headers
        self.length, self.chunked, self.close = None, False, False
        for name, value in headers:
            lowered = name.lower()
            if lowered == "content-length":
                self.length = int(value)
            elif lowered == "transfer-encoding":
                self.chunked = value.lower() == "chunked"
            elif lowered == "connection":
                self.close = value.lower() == "close"


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    first, *lines = head[:-4].decode("latin-1").split("\r\n")
    headers = []
    for line in lines:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    return Head(first, headers)


async def read_body(reader: asyncio.StreamReader, head: Head, *, to_eof: bool = False) -> bytes:
    if head.chunked:
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return bytes(body)
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    if head.length is not None:
        return await reader.readexactly(head.length)
    return await reader.read() if to_eof else b""


_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"})


def framed(first: str, headers: list[tuple[str, str]], body: bytes, *, close: bool) -> bytes:
    lines = [first, *(f"{name}: {value}" for name, value in headers if name.lower() not in _HOP)]
    lines += [f"Content-Length: {len(body)}", f"Connection: {'close' if close else 'keep-alive'}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass
class Proxy:
    upstream: tuple[str, int]
    api_delay: float
    upload_delay: float

    def delay(self, path: str) -> float:
        if path.startswith("/sandbox/uploads/"):
            return self.upload_delay
        return self.api_delay if path.startswith("/sandbox/") else 0.0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        caller = (writer.get_extra_info("peername") or ("-",))[0]
        try:
            while True:
                request = await read_head(reader)
                if request is None:
                    return
                request.headers.append(("X-Forwarded-For", caller))
                body = await read_body(reader, request)
                first = request.first
                wait = self.delay(first.split(" ")[1] if " " in first else "")
                if wait:
                    await asyncio.sleep(wait)
                writer.write(await self.forward(first, request.headers, body, close=request.close))
                await writer.drain()
                if request.close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def forward(self, first: str, headers: list[tuple[str, str]], body: bytes, *, close: bool) -> bytes:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            return framed("HTTP/1.1 502 Bad Gateway", [], b"sandbox not answering", close=close)
        try:
            up_writer.write(framed(first, headers, body, close=True))
            answer = await read_head(up_reader)  # the request is sent whole: no drain needed before
            if answer is None:
                return framed("HTTP/1.1 502 Bad Gateway", [], b"no answer from the sandbox", close=close)
            answer_body = await read_body(up_reader, answer, to_eof=True)
            return framed(answer.first, answer.headers, answer_body, close=close)
        finally:
            up_writer.close()


async def main(port: int, upstream: tuple[str, int], api_ms: float, upload_ms: float, bind: str) -> None:
    proxy = Proxy(upstream=upstream, api_delay=api_ms / 1000, upload_delay=upload_ms / 1000)
    server = await asyncio.start_server(proxy.serve, bind, port, backlog=2048)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bind", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--upstream", required=True, help="host:port of the gunicorn serving the sandbox")
    parser.add_argument("--api-ms", type=float, default=300.0)
    parser.add_argument("--upload-ms", type=float, default=500.0)
    args = parser.parse_args()
    host, _, upstream_port = args.upstream.rpartition(":")
    asyncio.run(main(args.port, (host, int(upstream_port)), args.api_ms, args.upload_ms, args.bind))
