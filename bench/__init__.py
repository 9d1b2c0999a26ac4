"""Benchmarks: run as scripts (python bench/NAME.py); a package so that tests can import them."""
