"""What waits on the broker: the messages of one queue, taken off it."""


def queue_taken(name: str, *, timeout: float = 0.5) -> list[dict]:
    """Take every message off the queue `name` (waiting `timeout` for each); the kwargs each carries."""
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
                found.append(message.payload[1])  # protocol 2: (args, kwargs, embed)
                message.ack()
        finally:
            queue.close()
    return found
