"""`python -m dvfslab`: the same as the `dvfslab` command."""

from dvfslab.cli.main import main

raise SystemExit(main())
