// Fair share inside a team (design.md, "Fair share inside a team"): how the
// users and sub-accounts of one team share it, from their own decayed usage
// and association shares, by the algorithm Slurm's priority/multifactor
// would use, with the team's account in the place of Slurm's root:
//   kFairTree        Fair Tree, Slurm's default (multifactor's fair_tree.c)
//   kClassic         classic fair share (PriorityFlags=NO_FAIR_TREE)
//   kDepthOblivious  depth-oblivious fair share (PriorityFlags=DEPTH_OBLIVIOUS)
// Read from SchedMD's 22.05.8 and 24.11.5 (identical there): fair_tree.c,
// priority_multifactor.c (_set_usage_efctv, _depth_oblivious_set_usage_efctv,
// priority_p_calc_fs_factor) and assoc_mgr.c (level_shares, the two share
// normalisations). Pure: no clock, no state.
#pragma once

#include <span>
#include <vector>

namespace gpufair {

enum class InTeamAlgo { kFairTree, kClassic, kDepthOblivious };

// Shares of an association with `sacctmgr ... fairshare=parent`
// (SLURMDB_FS_USE_PARENT): any negative value.
inline constexpr double kUseParentShares = -1;

// One association of the team. Node 0 is the team's own account (the root);
// every other node names its parent by index, lower than its own (parents
// first). A node that breaks this is left out (factor 0).
struct TreeNode {
  int parent = -1;
  bool user = false;   // a user association (a leaf), else an account
  double shares = 1;   // raw shares >= 0, or kUseParentShares
  double usage = 0;    // decayed usage of the association: its jobs and its subtree's
};

// What multifactor would keep in the association's usage record.
struct TreeShare {
  double shares_norm = 0;  // S: Fair Tree shares / level shares; classic: their product down from the team
  double usage_efctv = 0;  // Fair Tree: usage / parent's; classic: Slurm's effective usage
  double level_fs = 0;     // Fair Tree's S / U (+inf: no usage); 0 under the other algorithms
  // The factor inside the team, in [0, 1]. Fair Tree: rank / users of the
  // team for a user (1 for the best ranked), the best of its users' for an
  // account (0 without users); classic: 2^(-usage_efctv / shares_norm).
  // The root: 1.
  double factor = 0;
};

// out[i] for nodes[i]. Inputs that are negative or not finite count as 0
// (usage) or 0 shares (shares that are NaN or infinite).
std::vector<TreeShare> in_team_shares(std::span<const TreeNode> nodes, InTeamAlgo algo);

}  // namespace gpufair
