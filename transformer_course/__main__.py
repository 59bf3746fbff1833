"""``python -m transformer_course …``: see :mod:`transformer_course.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
