"""Workload readers and lowering onto a target."""
