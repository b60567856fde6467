"""Benchmarks (`make bench`): results go to BENCHMARKS.md with the machine and the command."""

print("no benchmarks yet")
