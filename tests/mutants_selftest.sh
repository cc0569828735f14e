#!/usr/bin/env bash
# The mutants' judge counts a test as a killer only when it failed on an
# assertion of its own: not when its fixture's SetUp or a harness failed;
# and it reads a report whatever bytes the tests' output put in it.
#
# Usage: mutants_selftest.sh ROOT
set -euo pipefail
root=${1:?usage: mutants_selftest.sh ROOT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests"
cat >"$tmp/tests/lab_test.cc" <<'CC'
class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(StartEtcd());
  }
};
TEST_F(LabTest, Refuses) {
  EXPECT_EQ(1, 2);
}
TEST_F(LabTest, StartsNothing) {
}
CC
cat >"$tmp/report.xml" <<XML
<testsuites><testsuite name="LabTest">
<testcase name="Refuses" classname="LabTest"><failure message="$tmp/tests/lab_test.cc:8&#x0A;Expected equality"/></testcase>
<testcase name="StartsNothing" classname="LabTest"><failure message="$tmp/tests/lab_test.cc:4&#x0A;Value of: StartEtcd()"/></testcase>
<testcase name="Harness" classname="LabTest"><failure message="$tmp/tests/etcd_harness.cc:40&#x0A;etcd did not start"/></testcase>
</testsuite></testsuites>
XML
# A program's output cut inside a UTF-8 character, and a control
# character, in a failure message: the report is still read.
sed -i "s/Expected equality/Expected equality $(printf '\217\001')/" "$tmp/report.xml"
out=$(python3 "$root/tests/mutants.py" killers "$tmp" "$tmp/report.xml")
if [ "$out" != "LabTest.Refuses" ]; then
  echo "mutants.py killers should have named LabTest.Refuses alone; it printed:"
  echo "$out"
  exit 1
fi
echo "mutants.py counts an assertion of the test, not a failed set-up or harness"
