#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates a trnsim native trace of one MoE training step. Usage: see --help and
docs/moe-generator.md. Standard library only."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))  # also as bin/trnsim-moe-gen

from moe.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
