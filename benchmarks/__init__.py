"""Benchmarks: Hermes side by side with the libraries a user would pick instead."""
