// poprun's --print-topology table for hosts, ILDs, instances and replicas.
#include "poprun/poprun_topology.h"

#include <gtest/gtest.h>

namespace vipu::poprun {
namespace {

// Four tables as Graphcore's poprun prints them, byte for byte.
TEST(PoprunTopology, OneHostOneInstanceFourReplicas) {
  EXPECT_EQ(RenderTopology({"gc-poplar-02"}, 1, 1, 4),
            " ===========================\n"
            "|      poprun topology      |\n"
            "|===========================|\n"
            "| hosts     | gc-poplar-02  |\n"
            "|-----------|---------------|\n"
            "| ILDs      |       0       |\n"
            "|-----------|---------------|\n"
            "| instances |       0       |\n"
            "|-----------|---------------|\n"
            "| replicas  | 0 | 1 | 2 | 3 |\n"
            " ---------------------------\n");
}

TEST(PoprunTopology, TwoInstancesEightReplicas) {
  EXPECT_EQ(RenderTopology({"localhost"}, 1, 2, 8),
            " ===========================================\n"
            "|              poprun topology              |\n"
            "|===========================================|\n"
            "| hosts     |           localhost           |\n"
            "|-----------|-------------------------------|\n"
            "| ILDs      |               0               |\n"
            "|-----------|-------------------------------|\n"
            "| instances |       0       |       1       |\n"
            "|-----------|-------------------------------|\n"
            "| replicas  | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 |\n"
            " -------------------------------------------\n");
}

TEST(PoprunTopology, HostIndexLabel) {
  EXPECT_EQ(RenderTopology({"[0]"}, 1, 2, 2),
            " ===================\n"
            "|  poprun topology  |\n"
            "|===================|\n"
            "| hosts     |  [0]  |\n"
            "|-----------|-------|\n"
            "| ILDs      |   0   |\n"
            "|-----------|-------|\n"
            "| instances | 0 | 1 |\n"
            "|-----------|-------|\n"
            "| replicas  | 0 | 1 |\n"
            " -------------------\n");
}

TEST(PoprunTopology, SixteenReplicasTwoDigitCells) {
  const std::string table = RenderTopology({"localhost"}, 1, 1, 16);
  EXPECT_EQ(
      table,
      " ==========================================================================================="
      "\n"
      "|                                      poprun topology                                      "
      "|"
      "\n"
      "|==========================================================================================="
      "|\n"
      "| hosts     |                                   localhost                                   "
      "|"
      "\n"
      "|-----------|-------------------------------------------------------------------------------"
      "|"
      "\n"
      "| ILDs      |                                       0                                       "
      "|"
      "\n"
      "|-----------|-------------------------------------------------------------------------------"
      "|"
      "\n"
      "| instances |                                       0                                       "
      "|"
      "\n"
      "|-----------|-------------------------------------------------------------------------------"
      "|"
      "\n"
      "| replicas  | 0  | 1  | 2  | 3  | 4  | 5  | 6  | 7  | 8  | 9  | 10 | 11 | 12 | 13 | 14 | 15 "
      "|"
      "\n"
      " -------------------------------------------------------------------------------------------"
      "\n");
}

TEST(PoprunTopology, HostsAndIldsSplitTheReplicas) {
  const std::string table = RenderTopology({"h0", "h1"}, 2, 4, 8);
  EXPECT_NE(table.find("| hosts     |      h0       |      h1       |\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| ILDs      |       0       |       1       |\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| instances |   0   |   1   |   2   |   3   |\n"), std::string::npos)
      << table;
}

TEST(PoprunTopology, LongLabelsWidenTheCells) {
  const std::string table = RenderTopology({"a-very-long-host-name"}, 1, 1, 1);
  EXPECT_NE(table.find("| hosts     | a-very-long-host-name |\n"), std::string::npos) << table;
  EXPECT_NE(table.find("| replicas  | 0                     |\n"), std::string::npos) << table;
}

}  // namespace
}  // namespace vipu::poprun
