"""course_tools: the tools that publish the course, beside the runtime package ``transformer_course``.

- :mod:`course_tools.edition`: the offline HTML edition and the slide decks (``make html``, ``make slides``);
- :mod:`course_tools.classroom`: the nbgrader course folder and the hub wheel (``… classroom OUT``);
- :mod:`course_tools.web`: a checkpoint exported to a static page that runs it in the browser (``… export-web``);
- :mod:`course_tools.results`: docs/results.json, the tables of docs/results.md and the quote check;
- :mod:`course_tools.engine`: a checkpoint exported to CTranslate2, for serving (``… export-ct2``);
- :mod:`course_tools.quiz`: the quizzes' plain texts locked with their answers into the runtime's question files
  (``python -m course_tools.quiz notebooks/solutions/quiz``).
- :mod:`course_tools.folders`: the folder each of them builds: claimed before any work, with a manifest of
  the files written there, so that a rebuild replaces only its own files.

These import the runtime; the runtime never imports them (tests/test_layout.py), so a learner's notebook and a
user's training, translation and heatmaps load none of this. ``python -m transformer_course COMMAND`` runs each
tool by name, loading it only then (transformer_course/cli.py). The map of both layers: docs/architecture.md.
"""

__all__ = ["classroom", "edition", "engine", "quiz", "results", "web"]  # subpackages, each imported by name
