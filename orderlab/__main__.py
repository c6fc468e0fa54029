"""`python -m orderlab` runs the CLI."""

from orderlab.cli import main

main()
