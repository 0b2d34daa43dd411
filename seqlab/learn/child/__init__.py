"""The program that runs a student's code, and the two modules it uses: the standard library, numpy
and torch only, never seqlab (``tests/learn/test_child_imports.py`` holds it to that).

The checker (``seqlab.learn.runner``) starts ``python main.py ROOT FIRST EVENTS`` from this folder,
inside the sandbox where there is one. ``main`` reads the request (the cases, as plain data),
imports the student's file, calls the function and writes back plain data (``plain_data``): the
outputs and the arguments as they are after each call. ``rules`` is the exercise's runtime rules
(forbidden functions, op counts), advisory: they run in the student's process. seqlab itself
imports ``plain_data`` and ``rules`` from here as ``seqlab.learn.child.plain_data`` and ``.rules``.
"""
