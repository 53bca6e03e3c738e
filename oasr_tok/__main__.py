"""`python -m oasr_tok`: the oasr-tok command line."""

from .cli import main

raise SystemExit(main())
