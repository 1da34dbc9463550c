"""Products, credential definitions and partner accounts, kept in step with the service."""
