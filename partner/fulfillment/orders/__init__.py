"""The order and its state: opened, failed, retried, completed; its reads and metrics."""
