"""Benchmark 2 driver: serve bench/floor.py under the intake's gunicorn configuration and load."""

from bench import floor, stack
from bench.intake import phases_run


def floor_bench(*, database: str, workers: int, threads: int, requests: int, concurrency: int, rate: float) -> dict:
    floor.table_create(database)
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    web = stack.gunicorn_start("floor-web", "bench.floor:application", env, workers=workers, threads=threads)
    try:
        phases = phases_run(
            web,
            database=database,
            table=floor.TABLE,
            requests=requests,
            concurrency=concurrency,
            rate=rate,
            tag="floor",
        )
        memory = {f"web_worker_{pid}": stack.peak_rss_kib(pid) for pid in stack.web_workers(web)}
    finally:
        web.stop()
    return {
        "server": f"gunicorn bench.floor:application, {workers} workers"
        + (f" x {threads} threads" if threads > 1 else ""),
        "concurrency": concurrency,
        **phases,
        "peak_rss_kib": memory,
    }
