"""Execution plugins: GPU executors and data dispatchers, registered as ``executors``."""
