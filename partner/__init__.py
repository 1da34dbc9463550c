"""The partner application: our domain apps, the service client and the sandbox."""
