"""Tests of open V-IPU's PopTorch (poptorch/python/poptorch) and of
popdist.poptorch, against plain PyTorch on the same rows.

Run from the repository root:
    PYTHONPATH=poptorch/python:popdist/python \\
        /usr/bin/python3 -m unittest discover -s tests/python/poptorch -t .
"""
