"""``python -m transformer_course.classroom OUT``: see :mod:`transformer_course.classroom.course`."""

import sys

from .course import main

if __name__ == "__main__":
    sys.exit(main())
