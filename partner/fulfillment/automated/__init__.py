"""The automated work: the pipeline that runs an order's steps, and the fulfillers that do the work."""
