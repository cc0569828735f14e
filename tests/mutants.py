"""The mutants of tests/mutants.txt: reads the table, checks that each
mutant's text occurs exactly once in its file, applies one, and judges a
run of its tests.

  mutants.py check ROOT            every mutant applies (exit 1 naming those that do not)
  mutants.py apply ROOT NAME       mutates ROOT/<file> in place
  mutants.py list ROOT [NAME...]   name, file and tests, tab-separated
  mutants.py killers ROOT XML      the tests of a gtest XML report that failed on an
                                   assertion of their own, one a line

A test killed a mutant only when it failed on an assertion of the test: a
failure located in a *_test.cc file outside a fixture's SetUp. A failure in
a harness (starting etcd, a server) is the set-up going wrong, which says
nothing about the mechanism the mutant broke.
"""

import os
import re
import sys
import xml.etree.ElementTree as ElementTree


def unescape(text):
    return text.replace("\\n", "\n").replace("\\&", "&")


def read_table(root):
    mutants = []
    with open(os.path.join(root, "tests", "mutants.txt")) as table:
        for number, line in enumerate(table, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("|")
            if len(fields) != 5 or not fields[0] or not fields[1] or not fields[2] or not fields[4]:
                sys.exit(f"tests/mutants.txt:{number}: needs name|file|text|replacement|tests")
            name, path, old, new, tests = fields
            mutants.append({"name": name, "file": path, "old": unescape(old),
                            "new": unescape(new), "tests": tests})
    return mutants


def occurrences(root, mutant):
    path = os.path.join(root, mutant["file"])
    if not os.path.exists(path):
        return -1
    with open(path) as f:
        return f.read().count(mutant["old"])


def check(root):
    bad = 0
    mutants = read_table(root)
    for m in mutants:
        n = occurrences(root, m)
        if n != 1:
            where = "the file does not exist" if n < 0 else f"its text occurs {n} times, not once"
            print(f"mutant {m['name']}: {m['file']}: {where}")
            bad += 1
    if bad:
        return 1
    print(f"mutants: each of the {len(mutants)} mutants' text occurs exactly once in its file")
    return 0


def apply(root, name):
    for m in read_table(root):
        if m["name"] != name:
            continue
        if occurrences(root, m) != 1:
            sys.exit(f"{m['file']}: the mutated text of {name} does not occur exactly once")
        path = os.path.join(root, m["file"])
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(m["old"], m["new"]))
        return 0
    sys.exit(f"no mutant named {name}")


def list_mutants(root, names):
    for m in read_table(root):
        if not names or m["name"] in names:
            print(f"{m['name']}\t{m['file']}\t{m['tests']}")
    return 0


def setup_lines(path):
    """The lines of `path` inside a SetUp or SetUpTestSuite function."""
    with open(path) as f:
        lines = f.read().split("\n")
    inside, depth, result = False, 0, set()
    for number, line in enumerate(lines, 1):
        if not inside and re.search(r"\bvoid\s+SetUp(TestSuite)?\s*\(", line):
            inside, depth = True, 0
        if inside:
            result.add(number)
            depth += line.count("{") - line.count("}")
            if depth <= 0 and "}" in line:
                inside = False
    return result


def on_an_assertion(root, message):
    """True when a gtest failure message is located in a test's own code."""
    located = re.match(r"([^\s:]+_test\.cc):(\d+)", message)
    if not located:
        return False
    path = located.group(1)
    if not os.path.isabs(path):
        path = os.path.join(root, path)
    if not os.path.exists(path):
        return False
    return int(located.group(2)) not in setup_lines(path)


def read_report(report):
    """gtest's XML report, read whatever bytes the tests' output put in it:
    a failure message may quote a program's output cut inside a UTF-8
    character, or hold control characters XML does not allow."""
    with open(report, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    return ElementTree.fromstring(re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "?", text))


def killers(root, report):
    for case in read_report(report).iter("testcase"):
        failures = case.findall("failure")
        if any(on_an_assertion(root, f.get("message", "")) for f in failures):
            print(f"{case.get('classname')}.{case.get('name')}")
    return 0


def main(argv):
    if len(argv) < 3 or argv[1] not in ("check", "apply", "list", "killers"):
        sys.exit(__doc__)
    if argv[1] == "check":
        return check(argv[2])
    if argv[1] == "apply":
        return apply(argv[2], argv[3])
    if argv[1] == "killers":
        return killers(argv[2], argv[3])
    return list_mutants(argv[2], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
