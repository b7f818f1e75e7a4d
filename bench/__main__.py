"""``python -m bench``."""

from bench._cli import main

raise SystemExit(main())
