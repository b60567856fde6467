"""Experiments that reproduce the seed papers' results, one module per paper."""
