"""Nothing accepted is lost: stalled orders handed back, the service's list reconciled, data purged on time."""
