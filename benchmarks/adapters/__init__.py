"""Adapters that run baselines outside raptor-cp as cells of ``raptor-cp report``."""
