"""The HTTP API: one router per resource, shared dependencies and the problem-details error shape."""
