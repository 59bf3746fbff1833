"""Reference solutions of the notebooks' exercises, one module per notebook.

Try the exercise first; the checkers in ``transformer_course.exercises`` tell you what is wrong.
"""
