"""``python -m mellea_ctx``: the same command line as ``mellea-ctx``."""

from __future__ import annotations

import sys

from ._cli.app import main

if __name__ == "__main__":
    sys.exit(main())
