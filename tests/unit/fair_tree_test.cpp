// Fair share inside a team (fair_tree.h): Slurm's Fair Tree and classic
// algorithms on one team's tree, case by case as doc/html/fair_tree.shtml
// and multifactor's code (22.05.8, 24.11.5) describe them. Expected values
// are worked out by hand from those rules in the comments.
#include "gpufair/fair_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace gpufair {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A node of a test tree, by name; parent by name ("" = the team).
struct N {
  std::string name, parent;
  bool user;
  double shares, usage;
};

struct TreeCase {
  const char* name;
  std::vector<N> nodes;  // the team (root) is added first, with the sum of the top nodes' usage
  // name -> expected factor (and level fair share when not NaN)
  std::vector<std::pair<std::string, double>> factor;
  std::vector<std::pair<std::string, double>> level_fs = {};
};

void PrintTo(const TreeCase& c, std::ostream* os) { *os << c.name; }

struct Built {
  std::vector<TreeNode> nodes;
  std::vector<std::string> names;
  int index(const std::string& n) const {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return static_cast<int>(i);
    ADD_FAILURE() << "no node " << n;
    return 0;
  }
};

Built build(const std::vector<N>& in) {
  Built b;
  b.names.push_back("");
  b.nodes.push_back(TreeNode{-1, false, 1, 0});
  for (const N& n : in) {
    const int p = b.index(n.parent);
    b.nodes.push_back(TreeNode{p, n.user, n.shares, n.usage});
    b.names.push_back(n.name);
    if (p == 0) b.nodes[0].usage += n.usage;
  }
  return b;
}

void check(const TreeCase& c, InTeamAlgo algo) {
  const Built b = build(c.nodes);
  const std::vector<TreeShare> out = in_team_shares(b.nodes, algo);
  ASSERT_EQ(out.size(), b.nodes.size());
  EXPECT_DOUBLE_EQ(out[0].factor, 1.0) << "the team itself";
  for (const auto& [name, want] : c.factor)
    EXPECT_NEAR(out[static_cast<std::size_t>(b.index(name))].factor, want, 1e-12) << name;
  for (const auto& [name, want] : c.level_fs)
    EXPECT_DOUBLE_EQ(out[static_cast<std::size_t>(b.index(name))].level_fs, want) << name;
}

// ---- Fair Tree -------------------------------------------------------------------

class FairTree : public ::testing::TestWithParam<TreeCase> {};
TEST_P(FairTree, RanksAsSlurm) { check(GetParam(), InTeamAlgo::kFairTree); }

const TreeCase kFairTreeCases[] = {
    // LF = S/U among siblings: S .25 .25 .5, U .5 .25 .25 -> LF .5 1 2;
    // ranked from the top, rank / users.
    {"level fair share orders users",
     {{"u1", "", true, 1, 50}, {"u2", "", true, 1, 25}, {"u3", "", true, 2, 25}},
     {{"u3", 1.0}, {"u2", 2.0 / 3}, {"u1", 1.0 / 3}},
     {{"u1", 0.5}, {"u2", 1.0}, {"u3", 2.0}}},
    // Equal LF = equal rank; the next one down takes the rank it would
    // have had without the tie (rank 4, 3, 3, 1 of 4).
    {"tied users share a rank",
     {{"a", "", true, 1, 0}, {"b", "", true, 1, 30}, {"c", "", true, 1, 30}, {"d", "", true, 1, 40}},
     {{"a", 1.0}, {"b", 0.75}, {"c", 0.75}, {"d", 0.25}},
     {{"a", kInf}}},
    // The algorithm's promise: every user of the sibling account with the
    // higher LF outranks every user of the other. B (LF .5/.25 = 2) before
    // A (.5/.75): B's heavy user b1 still ranks above A's light a2.
    {"users of a higher account rank above a lower account's",
     {{"A", "", false, 1, 75}, {"B", "", false, 1, 25},
      {"a1", "A", true, 1, 70}, {"a2", "A", true, 1, 5},
      {"b1", "B", true, 1, 24}, {"b2", "B", true, 1, 1}},
     {{"b2", 1.0}, {"b1", 0.75}, {"a2", 0.5}, {"a1", 0.25}, {"B", 1.0}, {"A", 0.5}},
     {{"A", 0.5 / 0.75}, {"B", 2.0}}},
    // A user tied with a sibling account gets the rank of the account's
    // highest ranked user (users sort first on a tie): u and A both LF 1.
    {"a user tied with a sibling account",
     {{"u", "", true, 1, 50}, {"A", "", false, 1, 50},
      {"a1", "A", true, 1, 50}, {"a2", "A", true, 1, 0}},
     {{"u", 1.0}, {"a2", 1.0}, {"a1", 1.0 / 3}}},
    // Tied sibling accounts: the documentation says their children are
    // merged before descending (b2 a2 a1 b1 -> 1 .75 .5 .25); multifactor's
    // code (_count_tied_accounts) never merges: A is walked, then B starts
    // tied with A's last user. gpufair does what the code does.
    {"tied sibling accounts are walked one after the other, as Slurm's code does",
     {{"A", "", false, 1, 50}, {"B", "", false, 1, 50},
      {"a1", "A", true, 1, 40}, {"a2", "A", true, 1, 10},
      {"b1", "B", true, 1, 45}, {"b2", "B", true, 1, 5}},
     {{"a2", 1.0}, {"a1", 0.75}, {"b2", 0.75}, {"b1", 0.25}}},
    // Zero shares: S = 0, LF 0, last; still rank / users > 0.
    {"zero shares rank last",
     {{"z", "", true, 0, 0}, {"y", "", true, 1, 10}},
     {{"y", 1.0}, {"z", 0.5}},
     {{"z", 0.0}, {"y", 1.0}}},
    // Nobody used anything: every LF is infinite, everyone ties at the top.
    {"no usage: everyone ties at the top",
     {{"A", "", false, 1, 0}, {"u", "", true, 3, 0}, {"a1", "A", true, 1, 0}, {"a2", "A", true, 5, 0}},
     {{"u", 1.0}, {"a1", 1.0}, {"a2", 1.0}, {"A", 1.0}},
     {{"u", kInf}, {"A", kInf}}},
    // fairshare=parent: a user ranks first in its account (LF infinite).
    {"a fairshare=parent user ranks first",
     {{"p", "", true, kUseParentShares, 90}, {"v", "", true, 1, 10}},
     {{"p", 1.0}, {"v", 0.5}},
     {{"p", kInf}}},
    // An account without users counts for nothing; one whose users are all
    // below another's is as good as its best user.
    {"an account with no users",
     {{"E", "", false, 1, 0}, {"u", "", true, 1, 10}},
     {{"u", 1.0}, {"E", 0.0}}},
};
INSTANTIATE_TEST_SUITE_P(Cases, FairTree, ::testing::ValuesIn(kFairTreeCases));

// ---- Classic (NO_FAIR_TREE) and depth-oblivious ---------------------------------------

class Classic : public ::testing::TestWithParam<TreeCase> {};
TEST_P(Classic, AsMultifactor) { check(GetParam(), InTeamAlgo::kClassic); }

const TreeCase kClassicCases[] = {
    // Right below the team: 2^(-U/S), U = usage / the team's.
    {"users of the team account",
     {{"u1", "", true, 1, 75}, {"u2", "", true, 3, 25}},
     {{"u1", std::exp2(-0.75 / 0.25)}, {"u2", std::exp2(-0.25 / 0.75)}}},
    // Deeper: S multiplies down (a1: .5 x .5); effective usage
    // UE = U + (UE_parent - U) x S / level shares: a1 .5 + 0 -> 2^-2,
    // a2 0 + .5 x .5 = .25 -> 2^-1.
    {"a sub-account's users",
     {{"A", "", false, 1, 50}, {"B", "", false, 1, 50},
      {"a1", "A", true, 1, 50}, {"a2", "A", true, 1, 0}},
     {{"A", 0.5}, {"B", 0.5}, {"a1", 0.25}, {"a2", 0.5}}},
    {"zero shares: 0",
     {{"z", "", true, 0, 0}, {"y", "", true, 1, 10}},
     {{"z", 0.0}, {"y", 0.5}}},
    {"no usage: 1",
     {{"A", "", false, 1, 0}, {"a1", "A", true, 1, 0}, {"u", "", true, 2, 0}},
     {{"A", 1.0}, {"a1", 1.0}, {"u", 1.0}}},
    // fairshare=parent: the parent's effective usage and shares.
    {"a fairshare=parent user takes its account's factor",
     {{"A", "", false, 1, 50}, {"B", "", false, 1, 50}, {"p", "A", true, kUseParentShares, 50}},
     {{"p", 0.5}, {"A", 0.5}}},
};
INSTANTIATE_TEST_SUITE_P(Cases, Classic, ::testing::ValuesIn(kClassicCases));

TEST(DepthOblivious, ParentRatioPulledByTheOwnRatio) {
  // A (S .5) used 20 of 100: ratio_p = .2/.5 = .4 < 1. Its user a1 used
  // all of A's: ratio_l = (.2/.25) / (.2/.5) = 2 > 1, so k = 1 / (1 +
  // (5 ln .4)^2) and UE = .4 x 2^k x .25; a2 used nothing: UE = its usage, 0.
  const Built b = build({{"A", "", false, 1, 20}, {"B", "", false, 1, 80},
                         {"a1", "A", true, 1, 20}, {"a2", "A", true, 1, 0}});
  const auto out = in_team_shares(b.nodes, InTeamAlgo::kDepthOblivious);
  const double k = 1.0 / (1.0 + std::pow(5.0 * std::log(0.4), 2));
  const double ue = 0.4 * std::pow(2.0, k) * 0.25;
  const auto& a1 = out[static_cast<std::size_t>(b.index("a1"))];
  EXPECT_NEAR(a1.usage_efctv, ue, 1e-12);
  EXPECT_NEAR(a1.factor, std::exp2(-ue / 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(out[static_cast<std::size_t>(b.index("a2"))].factor, 1.0);
  EXPECT_NEAR(out[static_cast<std::size_t>(b.index("A"))].factor, std::exp2(-0.2 / 0.5), 1e-12);
  // Same signs of the logs: k = 1, UE = ratio_p x ratio_l x S (A used 60:
  // ratio_p 1.2, ratio_l 2, UE .6).
  const Built c = build({{"A", "", false, 1, 60}, {"B", "", false, 1, 40},
                         {"a1", "A", true, 1, 60}, {"a2", "A", true, 1, 0}});
  const auto out2 = in_team_shares(c.nodes, InTeamAlgo::kDepthOblivious);
  EXPECT_NEAR(out2[static_cast<std::size_t>(c.index("a1"))].usage_efctv, 0.6, 1e-12);
}

// ---- Properties, on random trees -------------------------------------------------------

// Fair Tree's promise at every level: if sibling X has a higher level fair
// share than sibling Y, every user under X (or X itself) outranks every
// user under Y. And factors lie in (0, 1], the best user at 1.
TEST(FairTree, HigherSiblingsUsersAlwaysOutrankLowerSiblingsUsers) {
  std::mt19937 rng(20261206);
  for (int round = 0; round < 200; ++round) {
    // Every account gets a user: an account without users passes a tie on
    // to the next sibling (as in Slurm's code), which the promise ignores.
    std::vector<TreeNode> nodes{TreeNode{-1, false, 1, 0}};
    const int n = 2 + static_cast<int>(rng() % 30);
    auto add_user = [&](int p) {
      nodes.push_back(TreeNode{p, true, static_cast<double>(rng() % 4), static_cast<double>(rng() % 100)});
    };
    for (int i = 1; i < n; ++i) {
      int p = static_cast<int>(rng() % nodes.size());
      while (nodes[static_cast<std::size_t>(p)].user) p = nodes[static_cast<std::size_t>(p)].parent;
      if (rng() % 3 == 0) {
        nodes.push_back(TreeNode{p, false, static_cast<double>(rng() % 4), 0});
        add_user(static_cast<int>(nodes.size()) - 1);
      } else {
        add_user(p);
      }
    }
    // An account's usage is its subtree's.
    for (std::size_t i = nodes.size(); i-- > 1;)
      nodes[static_cast<std::size_t>(nodes[i].parent)].usage += nodes[i].usage;
    const auto out = in_team_shares(nodes, InTeamAlgo::kFairTree);
    auto under = [&](std::size_t u, std::size_t a) {
      for (int x = static_cast<int>(u); x >= 0; x = nodes[static_cast<std::size_t>(x)].parent)
        if (static_cast<std::size_t>(x) == a) return true;
      return false;
    };
    double best = 0;
    for (std::size_t x = 1; x < nodes.size(); ++x) {
      if (!nodes[x].user) continue;
      EXPECT_GT(out[x].factor, 0.0);
      EXPECT_LE(out[x].factor, 1.0);
      best = std::max(best, out[x].factor);
    }
    if (best > 0) {
      EXPECT_DOUBLE_EQ(best, 1.0);
    }
    for (std::size_t x = 1; x < nodes.size(); ++x)
      for (std::size_t y = 1; y < nodes.size(); ++y) {
        if (nodes[x].parent != nodes[y].parent || !(out[x].level_fs > out[y].level_fs)) continue;
        for (std::size_t ux = 1; ux < nodes.size(); ++ux)
          for (std::size_t uy = 1; uy < nodes.size(); ++uy)
            if (nodes[ux].user && nodes[uy].user && under(ux, x) && under(uy, y)) {
              EXPECT_GT(out[ux].factor, out[uy].factor) << "round " << round;
            }
      }
  }
}

TEST(InTeamShares, MalformedTreesLeaveNodesOutNeverCrash) {
  // A parent after its child, a parent out of range, NaN and infinite input.
  const std::vector<TreeNode> nodes = {
      {-1, false, 1, 10}, {2, true, 1, 5}, {7, true, 1, 5}, {0, true, std::nan(""), std::nan("")},
      {0, true, kInf, -3}};
  for (InTeamAlgo algo : {InTeamAlgo::kFairTree, InTeamAlgo::kClassic, InTeamAlgo::kDepthOblivious}) {
    const auto out = in_team_shares(nodes, algo);
    ASSERT_EQ(out.size(), nodes.size());
    EXPECT_EQ(out[1].factor, 0.0);
    EXPECT_EQ(out[2].factor, 0.0);
    for (const auto& s : out) EXPECT_FALSE(std::isnan(s.factor));
  }
  EXPECT_TRUE(in_team_shares({}, InTeamAlgo::kFairTree).empty());
  // No root: nothing.
  const std::vector<TreeNode> rootless = {{0, true, 1, 1}};
  EXPECT_EQ(in_team_shares(rootless, InTeamAlgo::kClassic)[0].factor, 0.0);
}

}  // namespace
}  // namespace gpufair
