"""``python -m transformer_course.results add-eval | add-run | render | check``: see :func:`transformer_course.results.main`."""

import sys

from . import main

raise SystemExit(main(sys.argv[1:]))
