// Fair share inside a team: Slurm's three algorithms on one team's tree
// (fair_tree.h; design.md, "Fair share inside a team").
#include "gpufair/fair_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpufair {
namespace {

// Slurm's NO_VAL as a level fair share: what multifactor gives an account
// with fairshare=parent (it sorts above every finite value).
constexpr double kNoVal = 4294967294.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Tree {
  std::span<const TreeNode> in;
  std::vector<char> valid;
  std::vector<std::vector<int>> children;  // in input order
  std::vector<double> usage, shares;       // sanitised
  std::vector<double> level_shares;        // of a node's children (assoc_mgr's level_shares of them)

  explicit Tree(std::span<const TreeNode> nodes) : in(nodes) {
    const int n = static_cast<int>(nodes.size());
    valid.assign(nodes.size(), 0);
    children.resize(nodes.size());
    usage.assign(nodes.size(), 0);
    shares.assign(nodes.size(), 0);
    level_shares.assign(nodes.size(), 0);
    for (int i = 0; i < n; ++i) {
      const TreeNode& t = nodes[i];
      const int p = t.parent;
      valid[i] = i == 0 ? p < 0 : (p >= 0 && p < i && valid[p]);
      if (!valid[i]) continue;
      if (i > 0) children[p].push_back(i);
      usage[i] = std::isfinite(t.usage) && t.usage > 0 ? t.usage : 0;
      shares[i] = t.shares < 0 ? kUseParentShares : (std::isfinite(t.shares) ? t.shares : 0);
    }
    // A fairshare=parent child stands for its own children's shares
    // (assoc_mgr's _get_children_level_shares). Children come after parents.
    for (int i = n - 1; i >= 0; --i) {
      if (!valid[i]) continue;
      double sum = 0;
      for (int c : children[i]) sum += use_parent(c) ? level_shares[c] : shares[c];
      level_shares[i] = sum;
    }
  }

  bool use_parent(int i) const { return i > 0 && shares[i] < 0; }
  // The association whose figures a node is measured against: its parent,
  // or the nearest ancestor without fairshare=parent (Slurm's fs_assoc_ptr).
  int fs_parent(int i) const {
    int p = in[i].parent;
    while (p > 0 && use_parent(p)) p = in[p].parent;
    return p;
  }
  double own_level_shares(int i) const { return level_shares[in[i].parent]; }
};

// ---- Fair Tree ---------------------------------------------------------------

struct FairTreeWalk {
  const Tree& tree;
  std::vector<TreeShare>& out;
  double users = 0;
  double rank = 0, rank_no_ties = 0;

  // Level fair share of every node: S / U among its siblings.
  void level_fair_share() {
    for (std::size_t i = 1; i < out.size(); ++i) {
      const int n = static_cast<int>(i);
      if (!tree.valid[i]) continue;
      TreeShare& s = out[i];
      const int f = tree.fs_parent(n);
      const int share_of = tree.use_parent(n) ? f : n;
      if (share_of == 0) {
        s.shares_norm = 1;  // fairshare=parent right below the team: the team's whole
      } else {
        const double ls = tree.own_level_shares(share_of);
        s.shares_norm = ls > 0 ? tree.shares[share_of] / ls : 0;
      }
      s.usage_efctv = tree.usage[f] > 0 ? tree.usage[i] / tree.usage[f] : 0;
      if (tree.use_parent(n)) {
        s.level_fs = tree.in[i].user ? kInf : kNoVal;
      } else if (s.shares_norm == 0) {
        s.level_fs = 0;
      } else {
        s.level_fs = s.usage_efctv > 0 ? s.shares_norm / s.usage_efctv : kInf;
      }
    }
  }

  // Siblings in descending level fair share, users before accounts on a
  // tie; each user ranked as met, each account descended into. A user tied
  // with the sibling before it gets that sibling's rank (for an account:
  // the rank of its last ranked user); a first child of a tied account
  // starts tied. Tied sibling accounts are descended into one after the
  // other: Slurm's documentation says their children are merged first, but
  // its code never merges them (_count_tied_accounts stops at the first
  // account it meets, and a tied user cannot follow an account in this
  // order), and sshare under multifactor shows what the code does.
  void visit(std::vector<int> siblings, bool account_tied) {
    std::stable_sort(siblings.begin(), siblings.end(), [&](int a, int b) {
      const double la = out[a].level_fs, lb = out[b].level_fs;
      if (la != lb) return la > lb;
      return tree.in[a].user && !tree.in[b].user;
    });
    double previous = kNoVal;
    for (std::size_t k = 0; k < siblings.size(); ++k) {
      const int a = siblings[k];
      const bool tied = (k == 0 && account_tied) || previous == out[a].level_fs;
      if (tree.in[a].user) {
        if (!tied) rank = rank_no_ties;
        out[a].factor = rank / users;
        rank_no_ties -= 1;
      } else {
        visit(tree.children[a], tied);
      }
      previous = out[a].level_fs;
    }
  }

  void run() {
    level_fair_share();
    for (std::size_t i = 1; i < out.size(); ++i) users += (tree.valid[i] && tree.in[i].user) ? 1 : 0;
    if (users == 0) return;
    rank = rank_no_ties = users;
    visit(tree.children[0], false);
    // An account: as good as its best ranked user.
    for (std::size_t i = out.size(); i-- > 1;) {
      if (!tree.valid[i]) continue;
      double& best = out[static_cast<std::size_t>(tree.in[i].parent)].factor;
      best = std::max(best, out[i].factor);
    }
  }
};

// ---- Classic and depth-oblivious ----------------------------------------------

void classic(const Tree& tree, InTeamAlgo algo, std::vector<TreeShare>& out) {
  const double root_usage = tree.usage[0];
  std::vector<double> usage_norm(out.size(), 0);
  for (std::size_t i = 0; i < out.size(); ++i)
    usage_norm[i] = root_usage > 0 ? std::min(1.0, tree.usage[i] / root_usage) : 0;
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (!tree.valid[i]) continue;
    const int n = static_cast<int>(i);
    const int f = tree.fs_parent(n);
    const TreeShare& fs = out[static_cast<std::size_t>(f)];
    TreeShare& s = out[i];
    const double ls = tree.own_level_shares(n);
    // Shares: the product of shares / level shares from the team down,
    // fairshare=parent associations left out (assoc_mgr's traditional).
    if (tree.use_parent(n)) s.shares_norm = fs.shares_norm;
    else s.shares_norm = ls > 0 ? tree.shares[i] / ls * fs.shares_norm : 0;
    const double un = usage_norm[i];
    if (f == 0) {
      s.usage_efctv = un;
    } else if (tree.use_parent(n)) {
      s.usage_efctv = fs.usage_efctv;
    } else if (algo == InTeamAlgo::kDepthOblivious) {
      // R = ratio_p * ratio_l^k: the parent's ratio, pulled towards 1 by
      // the node's own ratio among its siblings (multifactor's f = 5).
      double ratio_s = 0;
      for (int c : tree.children[static_cast<std::size_t>(f)])
        if (!tree.use_parent(c)) ratio_s += usage_norm[static_cast<std::size_t>(c)];
      s.usage_efctv = un;
      if (s.shares_norm > 0 && fs.shares_norm > 0 && fs.usage_efctv > 0 && un > 0 && ratio_s > 0) {
        const double ratio_p = fs.usage_efctv / fs.shares_norm;
        const double ratio_l = (un / s.shares_norm) / (ratio_s / fs.shares_norm);
        const double lp = std::log(ratio_p), ll = std::log(ratio_l);
        const double k = lp * ll >= 0 ? 1.0 : 1.0 / (1.0 + (5.0 * lp) * (5.0 * lp));
        s.usage_efctv = ratio_p * std::pow(ratio_l, k) * s.shares_norm;
      }
    } else {
      s.usage_efctv = ls > 0 ? un + (fs.usage_efctv - un) * (tree.shares[i] / ls) : fs.usage_efctv;
    }
    s.factor = s.shares_norm > 0 ? std::exp2(-s.usage_efctv / s.shares_norm) : 0;
    if (!std::isfinite(s.factor)) s.factor = 0;
  }
}

}  // namespace

std::vector<TreeShare> in_team_shares(std::span<const TreeNode> nodes, InTeamAlgo algo) {
  std::vector<TreeShare> out(nodes.size());
  if (nodes.empty()) return out;
  const Tree tree(nodes);
  if (!tree.valid[0]) return out;
  out[0] = TreeShare{1, 1, 0, 1};
  if (algo == InTeamAlgo::kFairTree) {
    FairTreeWalk{tree, out}.run();
    out[0].factor = 1;
  } else {
    classic(tree, algo, out);
  }
  return out;
}

}  // namespace gpufair
