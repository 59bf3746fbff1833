"""``python -m transformer_course.edition``: build the offline HTML edition (see :mod:`.build`)."""

from .build import main

if __name__ == "__main__":
    raise SystemExit(main())
