// Bad input gets a clear error naming file:line and the reason, never a crash.
#include <gtest/gtest.h>

#include "sim_test_util.h"
#include "yaml_doc.h"

namespace gpufair::sim {
namespace {

using testing::TempFile;

// Reads the whole trace; returns the error message, or "" when it read fine.
std::string read_trace_error(const std::string& csv, bool skip = false, std::uint64_t* skipped = nullptr,
                             std::string* path_out = nullptr) {
  TempFile f(csv);
  if (path_out) *path_out = f.path();
  Workload w;
  try {
    auto src = open_trace(f.path(), w, TraceOptions{skip});
    JobSpec j;
    while (src->next(j)) {
    }
    if (skipped) *skipped = src->skipped_rows();
  } catch (const SourceError& e) {
    return e.message.substr(e.message.find(':'));  // drop the temp path
  }
  return "";
}

TEST(TraceErrors, MissingRequiredColumn) {
  const auto e = read_trace_error("submit,account,user,gpus\n0,a,u,1\n");
  EXPECT_NE(e.find(":1: header has no 'runtime' column"), std::string::npos) << e;
}

TEST(TraceErrors, EmptyFile) {
  EXPECT_NE(read_trace_error("").find(":1: empty file"), std::string::npos);
}

struct BadRow {
  const char* row;
  const char* expect;
};

class TraceBadRow : public ::testing::TestWithParam<BadRow> {};

TEST_P(TraceBadRow, NamesLineAndReason) {
  const std::string csv = std::string("runtime,submit,account,user,gpus,qos,label\n") + "10,0,a,u,1,low,\n" +
                          GetParam().row + "\n";
  const auto e = read_trace_error(csv);
  EXPECT_NE(e.find(":3: "), std::string::npos) << e;
  EXPECT_NE(e.find(GetParam().expect), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, TraceBadRow,
    ::testing::Values(BadRow{"10,5,a,u,x,low,", "gpus 'x' is not a whole number"},
                      BadRow{"10,5,a,u,0,low,", "gpus '0'"},
                      BadRow{"10,5,a,u,2.5,low,", "gpus '2.5'"},
                      BadRow{"-1,5,a,u,1,low,", "runtime '-1'"},
                      BadRow{"10,abc,a,u,1,low,", "submit 'abc'"},
                      BadRow{"10,5,,u,1,low,", "account '' is empty"},
                      BadRow{"10,5,a/,u,1,low,", "starts/ends with '/'"},
                      BadRow{"10,5,a,,1,low,", "user is empty"},
                      BadRow{"10,5,te\x01" "am,u,1,low,", "account contains a control character"},
                      BadRow{"10,5,a,b\x7f" "ob,1,low,", "user contains a control character"},
                      BadRow{"10,5,a,u,1,urgent,", "qos 'urgent' is not low, mid or high"},
                      BadRow{"10,5,a,u,1,low,maybe", "label 'maybe'"},
                      BadRow{"10,5", "has 2 fields"}));

TEST(TraceErrors, UnsortedSubmitNamesTheRow) {
  const auto e = read_trace_error("submit,account,user,gpus,runtime\n100,a,u,1,10\n50,a,u,1,10\n");
  EXPECT_NE(e.find(":3: submit 50 is earlier than the previous row's 100"), std::string::npos) << e;
}

TEST(TraceErrors, SkipBadRowsCountsThem) {
  std::uint64_t skipped = 0;
  const auto e = read_trace_error("submit,account,user,gpus,runtime\n0,a,u,1,10\n1,a,u,x,10\n2,a,u,1,10\n3,,u,1,1\n",
                                  true, &skipped);
  EXPECT_EQ(e, "");
  EXPECT_EQ(skipped, 2u);
}

TEST(TraceErrors, QuotedFieldsAndExtraColumnsAreFine) {
  EXPECT_EQ(read_trace_error("note,submit,account,user,gpus,runtime\n\"a, b\",0,a,\"u\",1,10\n"), "");
}

std::string scenario_error(const std::string& yaml) {
  TempFile f(yaml, ".yaml");
  try {
    load_scenario(f.path());
  } catch (const SourceError& e) {
    return e.message.substr(f.path().size());
  }
  return "";
}

constexpr const char* kGood =
    "duration: 1d\n"
    "cluster: {gpus: 8}\n"
    "teams:\n"
    "  - name: a\n"
    "    workloads:\n"
    "      - {type: poisson, per_hour: 1, gpus: 1, runtime: 1h}\n";

// kGood with the first `from` replaced by `to`.
std::string swap(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

TEST(ScenarioErrors, GoodScenarioLoads) { EXPECT_EQ(scenario_error(kGood), ""); }

TEST(ScenarioErrors, EachProblemNamesItsLine) {
  struct Case {
    std::string yaml, expect;
  };
  const Case cases[] = {
      {"", ":1: empty file"},
      {"duration: 1d\ncluster: {gpus: 8}\nteams: [\n", "YAML syntax error"},
      {std::string(kGood) + "extra: 1\n", ":7: unknown key 'extra' in the scenario"},
      {std::string(kGood).replace(0, 12, "duration: 1x"), ":1: duration '1x'"},
      {std::string(kGood).replace(0, 12, "duration: -5"), ":1: duration"},
      {std::string(kGood).replace(std::string(kGood).find("gpus: 8"), 7, "gpus: 0"), ":2: gpus '0'"},
      {std::string(kGood).replace(std::string(kGood).find("poisson"), 7, "burst"), ":6: workload type 'burst'"},
      {std::string(kGood).replace(std::string(kGood).find("gpus: 1,"), 8, "gpus: -1,"), ":6: gpus '-1'"},
      {std::string(kGood).replace(std::string(kGood).find("per_hour: 1,"), 12, "per_hour: x,"), ":6: per_hour 'x'"},
      {std::string(kGood).replace(std::string(kGood).find("runtime: 1h"), 11, "runtime: {dist: gamma}"),
       ":6: runtime dist 'gamma'"},
      {"cluster: {gpus: 8}\nteams: []\n", "needs 'duration'"},
      {"duration: 1d\nteams: []\n", "needs 'cluster'"},
      {"duration: 1d\ncluster: {gpus: 8}\nteams: []\n", ":3: the scenario needs a non-empty 'teams' list"},
      {std::string(kGood).replace(std::string(kGood).find("per_hour: 1,"), 12, "per_hour: 1, shares: 1,"),
       ":6: unknown key 'shares' in workload"},
      {std::string(kGood) + "  - name: a\n    workloads: []\n", ":7: team 'a' appears twice"},
      {std::string(kGood) + "gaming_team: zz\n", ":7: gaming_team 'zz' is not one of the teams"},
      {swap(kGood, "{gpus: 8}", "{gpus: 8, handoff: sideways}"), ":2: handoff 'sideways' is not priority or preemptor"},
      {"duration: 1d\ncluster: {gpus: 8}\nteams:\n  - name: a\n    workloads:\n"
       "      - {type: placeholder, interval: 1h, jitter: 40m, gpus: 1, runtime: 1h}\n",
       ":6: jitter must be at most half the interval"},
      {"duration: 1d\ncluster: {gpus: 8}\nteams:\n  - name: a\n    workloads:\n"
       "      - {type: poisson, per_hour: 1, gpus: 1, runtime: 1h, accounts: [b/x]}\n",
       ":6: account 'b/x' is not 'a' or below it"},
      {"a: &x 1\nb: *x\n", ":2: YAML aliases are not supported"},
      {std::string(kGood).replace(0, 12, "duration: 99999d"), ":1: duration '99999d' is longer than 100 years"},
      {swap(swap(kGood, "duration: 1d", "duration: 9000d"), "per_hour: 1,", "per_hour: 100000,"),
       ":6: per_hour 100000.00 over this window would generate more than 5000000 jobs"},
      {"duration: 9000d\ncluster: {gpus: 8}\nteams:\n  - name: a\n    workloads:\n"
       "      - {type: placeholder, interval: 1s, gpus: 1, runtime: 1h}\n",
       ":6: placeholders every 1 s over this window would generate more than 5000000 jobs"},
  };
  for (const auto& c : cases) {
    const auto e = scenario_error(c.yaml);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "yaml:\n" << c.yaml << "\nerror: " << e;
  }
}

TEST(ScenarioErrors, MissingFile) {
  try {
    load_scenario("/nonexistent/dir/x.yaml");
    FAIL();
  } catch (const SourceError& e) {
    EXPECT_NE(e.message.find("/nonexistent/dir/x.yaml: cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpufair::sim
