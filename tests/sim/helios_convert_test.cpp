// The Helios converter on the sample shipped in sim/convert/ against a
// golden file, plus its error paths.
#include "helios_convert.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim_test_util.h"

namespace gpufair::sim {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string convert_to_string(const std::string& in, bool skip, ConvertStats* stats = nullptr) {
  std::FILE* f = std::tmpfile();
  const auto st = convert_helios(in, f, skip);
  if (stats) *stats = st;
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(HeliosConvert, SampleMatchesGoldenFile) {
  ConvertStats st;
  const auto out = convert_to_string(std::string(GPUFAIR_SIM_SOURCE) + "/convert/helios-sample.csv", false, &st);
  EXPECT_EQ(out, slurp(std::string(GPUFAIR_SIM_TESTS) + "/golden/helios-sample.expected.csv"));
  EXPECT_EQ(st.rows, 10u);
  EXPECT_EQ(st.written, 8u);
  EXPECT_EQ(st.cpu_only, 1u);
  EXPECT_EQ(st.never_started, 1u);
}

TEST(HeliosConvert, OutputReplaysInTheSimulator) {
  testing::TempFile f(convert_to_string(std::string(GPUFAIR_SIM_SOURCE) + "/convert/helios-sample.csv", false));
  Workload w;
  w.source = open_trace(f.path(), w, {});
  SimOptions o;
  o.gpus = 16;
  o.gpus_per_node = 8;
  const auto r = simulate(w, "gpufair", testing::config_from({}), o);
  EXPECT_EQ(r.jobs, 8u);
  EXPECT_EQ(r.teams.size(), 4u);  // one team per virtual cluster
  // The 16-GPU job needs both nodes: it waits for the 8-GPU job on node 0 (until 22282).
  EXPECT_EQ(testing::team(r, "vcgamma").waits.front(), 22282 - 291);
}

TEST(HeliosConvert, TimesParse) {
  std::int64_t s = 0;
  ASSERT_TRUE(parse_helios_time("2020-04-01 00:00:39", s));
  EXPECT_EQ(s, 1585699239);
  ASSERT_TRUE(parse_helios_time("1970-01-01 00:00:00", s));
  EXPECT_EQ(s, 0);
  ASSERT_TRUE(parse_helios_time("2024-02-29 12:00:00", s));
  EXPECT_EQ(s, 1709208000);
  EXPECT_FALSE(parse_helios_time("2020-13-01 00:00:00", s));
  EXPECT_FALSE(parse_helios_time("yesterday", s));
}

TEST(HeliosConvert, BadRowsAreErrorsOrCounted) {
  testing::TempFile f(
      "user,vc,gpu_num,submit_time,start_time,duration\n"
      "u,v,1,2020-04-01 00:00:00,2020-04-01 00:00:01,10\n"
      "u,v,one,2020-04-01 00:00:00,2020-04-01 00:00:01,10\n");
  try {
    convert_to_string(f.path(), false);
    FAIL() << "a bad row must stop the conversion";
  } catch (const SourceError& e) {
    EXPECT_NE(e.message.find(f.path() + ":3: gpu_num 'one'"), std::string::npos) << e.message;
  }
  ConvertStats st;
  convert_to_string(f.path(), true, &st);
  EXPECT_EQ(st.bad, 1u);
  EXPECT_EQ(st.written, 1u);
}

TEST(HeliosConvert, MissingColumnIsNamed) {
  testing::TempFile f("user,gpu_num,submit_time,duration\nu,1,0,1\n");
  try {
    convert_to_string(f.path(), false);
    FAIL();
  } catch (const SourceError& e) {
    EXPECT_NE(e.message.find(":1: Helios header has no 'vc' column"), std::string::npos) << e.message;
  }
}

}  // namespace
}  // namespace gpufair::sim
