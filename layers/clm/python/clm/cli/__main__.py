"""`python -m clm.cli` runs the `clm` command."""

from clm.cli.main import main

main()
