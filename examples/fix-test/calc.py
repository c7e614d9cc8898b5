"""A tiny calculator module with a bug for ward's demo to fix."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
