"""``python -m course_tools.edition``: build the offline HTML edition, or with ``--slides`` the offline
reveal.js decks (see :mod:`.build` and :mod:`.slides`)."""

from .build import main

if __name__ == "__main__":
    raise SystemExit(main())
