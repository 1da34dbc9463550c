"""What waits on the broker: the messages of one queue, taken off it."""


def payloads_taken(name: str, *, timeout: float = 0.5) -> list[tuple]:
    """Take every message off the queue `name` (waiting `timeout` for each); the payload of each,
    protocol 2's (args, kwargs, embed)."""
    from config.celery import app

    found = []
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(name)
        try:
            while True:
                try:
                    message = queue.get(block=True, timeout=timeout)
                except queue.Empty:
                    break
                found.append(message.payload)
                message.ack()
        finally:
            queue.close()
    return found


def queue_taken(name: str, *, timeout: float = 0.5) -> list[dict]:
    """Take every message off the queue `name`; the kwargs each carries."""
    return [payload[1] for payload in payloads_taken(name, timeout=timeout)]


def args_taken(name: str, *, timeout: float = 0.5) -> list[list]:
    """Take every message off the queue `name`; the args each carries."""
    return [payload[0] for payload in payloads_taken(name, timeout=timeout)]
