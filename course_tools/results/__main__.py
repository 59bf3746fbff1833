"""``python -m course_tools.results add-eval | add-run | render | check``: see :func:`course_tools.results.main`."""

import sys

from . import main

raise SystemExit(main(sys.argv[1:]))
