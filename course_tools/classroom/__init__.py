"""The classroom edition: the course notebooks as an nbgrader course folder (a teacher's tool, not
imported by the notebooks). ``python -m course_tools.classroom OUT`` writes it; nbgrader (the
``[classroom]`` extra) does the rest: ``nbgrader generate_assignment``, ``autograde``, ``generate_feedback``.

The exercise convention (what the build finds in every notebook; a notebook that breaks it stops the build
with a :class:`ConventionError` naming the cell and what to change):

- **An exercise cell** is a code cell with a function or class stub whose body ends with
  ``raise NotImplementedError``, or with answer lines ``name = ...`` (``...`` as the value, or inside a literal
  tuple, list or dict). Its reference solution is in the notebook's solutions module ``notebooks/solutions/nbNN_*.py``
  (read as text, never run): a function or class of the same name with the same parameters; for an answer,
  the module-level ``name`` or ``NAME``, else, the answer being given to ``ex.check_x``, the module's ``x`` or
  ``X`` (given positionally) or the entry ``"key"`` of a dict ``X`` or ``x`` (given as ``key=name``:
  ``QUIZ = {"q1": …}`` answers ``ex.check_quiz(q1=q1)``). In the teacher's source notebook the learner-visible lines
  stay (the ``def`` line, its docstring and comments, the ``name = ...`` lines) and the reference code follows
  between ``### BEGIN SOLUTION`` and ``### END SOLUTION``: the function's body (a class: each stubbed method's
  body) with any import it needs that the notebook lacks, or ``name = <reference value>`` after the answer
  lines. ``nbgrader generate_assignment`` turns each region into ``# YOUR CODE HERE`` /
  ``raise NotImplementedError()``. Lines a stub keeps before its ``raise`` (``super().__init__()``) must be the
  first lines of the reference.
- **A checker cell** is a code cell calling ``ex.check_…(…)`` (``ex``: any name bound to a
  ``transformer_course.exercises`` module), as a statement or as an ``if`` condition. It becomes a read-only
  graded cell that starts with an nbgrader hidden test (``### BEGIN HIDDEN TESTS``: not in the student's
  release, put back by ``nbgrader autograde``): :mod:`.verdict` runs the cell's checks again with fresh copies of
  the checker modules loaded from their files, so no name the student's cells rebound (``ex``, a checker, a
  ``sys.modules`` entry) takes part. Under ``nbgrader autograde`` the notebook runs in a sandbox (:mod:`.sandbox`:
  its own mount, pid and network namespaces, the course hidden) where the hidden test only records what each
  check observed; nbgrader's process replays the checks from those records with its own checkers (:mod:`.judge`,
  :mod:`.autograde`) and makes their points the cell's result (partial credit). The cell's own text follows: the self-check the student runs while working, with every hint; a cell that checks answers only
  (``name = ...``) runs it inside ``sealed()`` (:mod:`transformer_course.exercises.seal`): it tells the answers'
  form, not whether they are right, so trying every letter reveals nothing. A cell with exercise lines and then
  checker calls is split in two cells: the solution cell, then the graded cell. Every exercise must be given (by
  name) to some checker, and no checker may be given ``...`` or a name its own cell sets to a literal: the
  learner could not change them in a read-only cell.
- **Every other cell** is copied as it is, outputs cleared; in markdown, a sentence that links the reference
  solutions says instead that the teacher shares them after grading (:mod:`.release_text`).
- **Points**: each checker call is worth 2 points when it is given a function or class the learner writes,
  1 point when it is given answers (name = ...), and a quiz (check_quiz) 1 point per answer; a graded cell
  scores the points of the checks that pass (partial credit).

The course folder: ``nbgrader_config.py`` (course id, fast grading with ``TC_FAST=1``, this environment's tools
first on PATH, and the grading kernel's limits: a cell that runs longer than the timeout (``--timeout``, 120 s)
is interrupted, a notebook that grows ``--memory`` GiB (4) beyond its kernel's start gets ``MemoryError``, a cell's
output stops at 1 MB; such a cell scores zero with one line saying why and the other cells are graded, see
:mod:`.kernel_guard`), ``README.md`` (assignments, points, commands) and one assignment per notebook,
``source/nbNN/NN_name.ipynb``, with the files its text shows (``figures/…``); with ``--hub``,
``hub/transformer_course-<version>-py3-none-any.whl``: the students' install, no solution in it (:mod:`.hub`).
"""

from __future__ import annotations

from .cells import POINTS_RULE
from .convert import Conversion, GradedCell, SolutionCell, convert_notebook
from .course import COURSE_ID, Assignment, build_course, main, nbgrader_config
from .reference import ConventionError, ReferenceModule

__all__ = [
    "COURSE_ID",
    "POINTS_RULE",
    "Assignment",
    "Conversion",
    "ConventionError",
    "GradedCell",
    "ReferenceModule",
    "SolutionCell",
    "build_course",
    "convert_notebook",
    "main",
    "nbgrader_config",
]
