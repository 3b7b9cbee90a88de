#include "gpufair/teams.h"

#include <cctype>

namespace gpufair {

std::string roll_up_account(std::string_view path, int team_level) {
  if (team_level < 1) team_level = 1;
  std::string out;
  int taken = 0;
  bool first_component = true;
  std::size_t i = 0;
  while (i <= path.size() && taken < team_level) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    i = j + 1;
    if (part.empty()) continue;
    std::string lower;
    for (char c : part) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    // The host should pass the path below root, but tolerate "root/...".
    if (first_component && lower == "root") {
      first_component = false;
      continue;
    }
    first_component = false;
    if (!out.empty()) out.push_back('/');
    out += lower;
    ++taken;
  }
  return out;
}

}  // namespace gpufair
