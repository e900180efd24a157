# SPDX-License-Identifier: MIT
"""The one error type of the generator: a bad argument, named by its option."""


class UsageError(Exception):
    """A bad command-line argument (or a bad file it names). `arg` is the option, e.g. "--ep"."""

    def __init__(self, arg, message):
        super().__init__(f"argument {arg}: {message}")
        self.arg = arg
        self.message = message
