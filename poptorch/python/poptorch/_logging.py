"""The "poptorch" logger and its level (POPTORCH_LOG_LEVEL, setLogLevel).

PopTorch's user guide documents INFO as the default level, so the line that
names this implementation and the end-of-run summaries show unless a program
or POPTORCH_LOG_LEVEL asks for less.
"""
import logging
import os
import sys

__all__ = ["logger", "setLogLevel"]

logger = logging.getLogger("poptorch")

# PopTorch's level names, TRACE and DEBUG both mapping to Python's DEBUG.
_LEVELS = {
    "TRACE": logging.DEBUG,
    "TRACE_ALL": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "DEBUG_IR": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERR": logging.ERROR,
    "OFF": logging.CRITICAL + 1,
}
# PopTorch's legacy integer levels.
_INT_LEVELS = {0: "TRACE", 1: "DEBUG", 2: "INFO", 3: "WARN", 4: "ERR", 6: "OFF"}


def setLogLevel(level):
    """Sets how much the poptorch logger prints: TRACE, DEBUG, INFO, WARN,
    ERR or OFF (or PopTorch's integers 0..4, 6)."""
    if isinstance(level, int) and not isinstance(level, bool):
        if level not in _INT_LEVELS:
            raise ValueError(f"Invalid log level integer {level}")
        level = _INT_LEVELS[level]
    if level not in _LEVELS:
        names = ", ".join(k for k in _LEVELS if k not in ("TRACE_ALL", "DEBUG_IR"))
        raise ValueError(f"Unknown log level: {level}. Valid values are {names}")
    logger.setLevel(_LEVELS[level])


class _Formatter(logging.Formatter):
    def __init__(self):
        super().__init__("[%(asctime)s.%(msecs)03d] [poptorch] [%(levelname)s] %(message)s", "%H:%M:%S")

    def format(self, record):
        record.levelname = record.levelname.lower()
        return super().format(record)


def _install():
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    logger.addHandler(handler)
    # Our own handler prints; propagating as well would print twice once
    # the program configures the root logger.
    logger.propagate = False
    try:
        setLogLevel(os.environ.get("POPTORCH_LOG_LEVEL", "INFO"))
    except ValueError as e:
        setLogLevel("INFO")
        logger.warning("POPTORCH_LOG_LEVEL: %s; using INFO", e)


_install()
