"""``python -m course_tools.classroom OUT``: see :mod:`course_tools.classroom.course`."""

import sys

from .course import main

if __name__ == "__main__":
    sys.exit(main())
