"""`python -m cli ...` is `transformer-viz ...` (from the repository root, before installing)."""

import sys

from cli.main import main

sys.exit(main())
