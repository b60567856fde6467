"""`python -m nicsim` is the `nicsim` command."""

from nicsim.cli import main

main()
