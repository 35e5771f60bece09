"""`python -m dvfslab`: the same as the `dvfslab` command."""

from dvfslab.cli import main

raise SystemExit(main())
