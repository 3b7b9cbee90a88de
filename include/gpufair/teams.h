// Teams: a job's Slurm account path below root, rolled up to `team_level`
// components, so sub-accounts and every user of a team count together.
#pragma once

#include <string>
#include <string_view>

namespace gpufair {

// "teama/nlp/interns" at level 1 -> "teama", level 2 -> "teama/nlp".
// A path shorter than the level is its own team. Empty components and a
// leading "root/" are ignored; the result is lower case. Empty input -> "".
std::string roll_up_account(std::string_view account_path, int team_level);

}  // namespace gpufair
