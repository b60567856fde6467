"""`python -m nicsim` is the `nicsim` command."""

from nicsim._entry import main

main()
