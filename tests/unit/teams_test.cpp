#include "gpufair/teams.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

struct RollUpCase {
  const char* path;
  int level;
  const char* team;
};

TEST(Teams, RollUpToTeamLevel) {
  const RollUpCase cases[] = {
      {"teama/nlp/interns", 1, "teama"},
      {"teama/nlp/interns", 2, "teama/nlp"},
      {"teama/nlp/interns", 3, "teama/nlp/interns"},
      {"teama/nlp/interns", 5, "teama/nlp/interns"},  // shorter path: its own team
      {"teama", 2, "teama"},
      {"TeamA/NLP", 1, "teama"},
      {"/teama//nlp/", 2, "teama/nlp"},
      {"root/teama/nlp", 1, "teama"},
      {"", 1, ""},
      {"///", 1, ""},
      {"teamb", 0, "teamb"},  // level below 1 behaves as 1
  };
  for (const auto& c : cases) {
    EXPECT_EQ(roll_up_account(c.path, c.level), c.team) << c.path << " @" << c.level;
  }
}

}  // namespace
}  // namespace gpufair
