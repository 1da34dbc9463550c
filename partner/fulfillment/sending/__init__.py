"""What goes to the service and comes back: uploads, the staff's deliveries, the service's callbacks."""
