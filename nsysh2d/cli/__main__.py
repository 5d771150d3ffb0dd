"""`python -m nsysh2d.cli`: the same as the `nsysh2d` console script."""
from .commands import main

main()
