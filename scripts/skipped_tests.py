"""Names every test that skipped in the last ctest run of a build directory,
and why, from ctest's log (Testing/Temporary/LastTest.log): whole ctest
tests that ctest counted as skipped, and the gtest cases that skipped inside
a ctest test that passed.

  skipped_tests.py BUILD_DIR [BUILD_DIR...]

Prints one line a skipped test and a count per directory; exits 0 (the
verdict on a skip is the test's own, VIPU_TESTS_MUST_RUN).
"""

import os
import re
import sys

_TEST = re.compile(r"^\d+/\d+ Test: (.+)$", re.M)
# gtest: "<file>:<line>: Skipped\n<reason lines>\n[  SKIPPED ] Suite.Name (N ms)"
_GTEST_SKIP = re.compile(r"^[^\n]*: Skipped\n(.*?)\n?\[  SKIPPED \] (\S+) \(", re.M | re.S)


def skipped_in(log):
    found = []
    starts = list(_TEST.finditer(log))
    for i, start in enumerate(starts):
        block = log[start.end():starts[i + 1].start() if i + 1 < len(starts) else len(log)]
        name = start.group(1).strip()
        cases = [(case, " ".join(reason.split()) or "no reason given")
                 for reason, case in _GTEST_SKIP.findall(block)]
        if cases:
            found.extend((f"{name}: {case}", reason) for case, reason in cases)
        elif re.search(r'^Test (Skipped|Not Run)|^SKIPPED: ', block, re.M) or \
                "Test Failed." not in block and "Test Passed." not in block and "Skip" in block:
            reason = re.search(r"^SKIPPED: (.*)$", block, re.M)
            found.append((name, reason.group(1) if reason else "skipped (see the log)"))
    return found


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    for directory in argv[1:]:
        path = os.path.join(directory, "Testing", "Temporary", "LastTest.log")
        if not os.path.exists(path):
            print(f"skipped tests in {directory}: no ctest log")
            continue
        with open(path, errors="replace") as f:
            found = skipped_in(f.read())
        print(f"skipped tests in {directory}: {len(found)}")
        for name, reason in found:
            print(f"  {name}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
