// popdist's run report for poprun's --autoreport-dir: when it is written,
// where, and what the JSON holds.
#include "popdist/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "popdist/context.h"
#include "tests/unit/support/popdist_env.h"
#include "tests/unit/support/temp_dir.h"

namespace {

using ::testing::HasSubstr;

using PopdistReport = vipu::test::PopdistEnvTest;

popdist::RunReport Sample() {
  popdist::RunReport r;
  r.partition_id = "p\"1";
  r.gcd = 1;
  r.device = 13;
  r.generation = 7;
  r.machines = {"ag1", "ag2"};
  r.routing = "RINGSWNC";
  r.gw_routing = "DEFAULT";
  r.sync_type = "c2-compatible";
  r.steps = 3;
  r.modelled_time_s = 1.5;
  r.elapsed_s = 0.25;
  r.samples_per_sec = 2048;
  r.step_source = "in-process model of bow-pod16";
  r.step_time_s = 0.5;
  r.ipus = {{0, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.015625},
            {1, 0.3, 0.1, 0.05, 0.03, 0.01, 0.01}};
  return r;
}

TEST_F(PopdistReport, EnabledByTheDirectoryUnlessAutoReportAllIsFalse) {
  EXPECT_FALSE(popdist::isAutoReportEnabled());
  Set({{"POPLAR_ENGINE_OPTIONS", "{\"autoReport.all\":\"true\"}"}});
  EXPECT_FALSE(popdist::isAutoReportEnabled());  // no --autoreport-dir
  Set({{"POPDIST_AUTOREPORT_DIRECTORY", "/tmp/profile"}});
  EXPECT_TRUE(popdist::isAutoReportEnabled());
  for (const char* off : {"{\"autoReport.all\":\"false\"}", "{ \"autoReport.all\" : false }",
                          "{\"allowOutOfMemory\":\"true\",\"autoReport.all\":\"false\"}"}) {
    Set({{"POPLAR_ENGINE_OPTIONS", off}});
    EXPECT_FALSE(popdist::isAutoReportEnabled()) << off;
  }
  for (const char* on :
       {"", "{}", "{\"allowOutOfMemory\":\"true\"}", "{\"autoReport.all\":\"true\"}",
        "{\"autoReport.outputExecutionProfile\":"
        "\"false\"}"}) {
    Set({{"POPLAR_ENGINE_OPTIONS", on}});
    EXPECT_TRUE(popdist::isAutoReportEnabled()) << on;
  }
}

TEST_F(PopdistReport, JsonHoldsTheInstancePartitionRunAndIpus) {
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "4"},
       {"POPDIST_NUM_LOCAL_REPLICAS", "2"},
       {"POPDIST_NUM_IPUS_PER_REPLICA", "4"},
       {"POPDIST_REPLICA_INDEX_OFFSET", "2"},
       {"POPDIST_LOCAL_INSTANCE_INDEX", "1"}});
  const std::string json = popdist::formatRunReport(Sample());
  EXPECT_THAT(json, HasSubstr("\"format\": \"vipu-report\",\n  \"version\": 1,"));
  EXPECT_THAT(json, HasSubstr("\"instance\": {\n    \"index\": 1,\n    \"instances\": 2,\n"
                              "    \"local_index\": 1,\n    \"replica_offset\": 2,\n"
                              "    \"local_replicas\": 2,\n    \"total_replicas\": 4,\n"
                              "    \"ipus_per_replica\": 4\n  }"));
  EXPECT_THAT(json, HasSubstr("\"id\": \"p\\\"1\""));
  EXPECT_THAT(json, HasSubstr("\"device\": 13,"));
  EXPECT_THAT(json, HasSubstr("\"machines\": [\"ag1\", \"ag2\"]"));
  EXPECT_THAT(json, HasSubstr("\"sync_type\": \"c2-compatible\""));
  EXPECT_THAT(json, HasSubstr("\"run\": {\n    \"steps\": 3,\n    \"modelled_time_s\": 1.5,\n"
                              "    \"elapsed_s\": 0.25,\n    \"samples_per_sec\": 2048\n  }"));
  EXPECT_THAT(json, HasSubstr("\"source\": \"in-process model of bow-pod16\""));
  EXPECT_THAT(json, HasSubstr("{\n        \"ipu\": 0,\n        \"compute_s\": 0.25,\n"
                              "        \"exchange_s\": 0.125,\n        \"sync_s\": 0.0625,\n"
                              "        \"collectives_s\": 0.03125,\n"
                              "        \"weight_update_s\": 0.015625,\n"
                              "        \"host_s\": 0.015625\n      }"));
  EXPECT_THAT(json, HasSubstr("\"ipu\": 1,"));

  // An offline run has no partition; a number JSON cannot hold is null.
  popdist::RunReport offline = Sample();
  offline.partition_id.clear();
  offline.samples_per_sec = std::numeric_limits<double>::infinity();
  offline.ipus.clear();
  const std::string off = popdist::formatRunReport(offline);
  EXPECT_THAT(off, HasSubstr("\"partition\": null,"));
  EXPECT_THAT(off, HasSubstr("\"samples_per_sec\": null"));
  EXPECT_THAT(off, HasSubstr("\"ipus\": []"));
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(PopdistReport, WrittenInTheInstancesOwnDirectoryOnlyWhenAsked) {
  vipu::test::TempDir tmp("popdist-report");
  const std::string root = tmp.path() + "/profile";
  EXPECT_EQ(popdist::writeRunReport(Sample()), "");
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "2"},
       {"POPDIST_NUM_LOCAL_REPLICAS", "1"},
       {"POPDIST_REPLICA_INDEX_OFFSET", "1"},
       {"POPDIST_AUTOREPORT_DIRECTORY", root},
       {"POPLAR_ENGINE_OPTIONS", "{\"autoReport.all\":\"false\"}"}});
  EXPECT_EQ(popdist::writeRunReport(Sample()), "");
  EXPECT_FALSE(std::filesystem::exists(root));

  unsetenv("POPLAR_ENGINE_OPTIONS");
  const std::string path = popdist::writeRunReport(Sample());
  EXPECT_EQ(path, root + "/1/vipu-report.json");
  EXPECT_EQ(Read(path), popdist::formatRunReport(Sample()));
  // Nothing else is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(root + "/1"),
                          std::filesystem::directory_iterator()),
            1);

  // A directory that cannot be made is named.
  std::ofstream(tmp.path() + "/file") << "x";
  Set({{"POPDIST_AUTOREPORT_DIRECTORY", tmp.path() + "/file"}});
  try {
    popdist::writeRunReport(Sample());
    ADD_FAILURE() << "no error";
  } catch (const popdist::popdist_error& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("vipu-report: cannot write " + tmp.path() + "/file/1/vipu-report.json"));
  }
}

}  // namespace
