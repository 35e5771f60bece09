"""The `dvfslab` command line. `main.py` builds the parser from one module per command group
(`listings`: platforms, governors, workloads; `run`; `compare`; `campaign`; `validate`; `bench`;
`trace`; `replay`; `tune`) and runs it; `parser`, `output` and `campaign_runs` hold what
several commands share."""
