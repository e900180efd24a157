# SPDX-License-Identifier: MIT
"""MoE training-step trace generator for trnsim (standard library only).

Modules: model (hyper-parameter files), parallel (rank -> group mapping), routing (token
routing draws), build (per-rank op lists), trace (serialisation), cli (arguments, exit codes).
"""
